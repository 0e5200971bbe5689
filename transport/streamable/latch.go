package streamable

// latch is an event that happens once, such as a response being written,
// with a channel to wait on that is made only when someone waits: the
// usual case, an event that happens before anyone waits, allocates
// nothing. Its owner's lock guards it.
type latch struct {
	fired bool
	ch    chan struct{} // closed once fired; made by wait
}

// fire makes the event happen, once.
func (l *latch) fire() {
	if !l.fired {
		l.fired = true
		if l.ch != nil {
			close(l.ch)
		}
	}
}

// wait returns a channel closed once the event happened.
func (l *latch) wait() <-chan struct{} {
	if l.ch == nil {
		l.ch = make(chan struct{})
		if l.fired {
			close(l.ch)
		}
	}
	return l.ch
}
