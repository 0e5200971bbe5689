package asyncwriter

// Wakes is how many times w's goroutine has woken.
func Wakes(w *Writer) uint64 { return w.wakes.Load() }
