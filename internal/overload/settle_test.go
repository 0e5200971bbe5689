package overload

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// closedLoop simulates, in fake time, clients that each send one request
// at a time to a process serving capacity requests a second on all its
// processors, FIFO; refused, a client waits Retry-After if it honors it,
// else retries at once. A refusal costs refusalCost of a served request.
type closedLoop struct {
	l               *Limiter
	now, queued     time.Duration // the clock; the wait of the request at hand
	cpu             time.Duration // the process's CPU time
	capacity        float64
	honor           bool
	queue           []time.Duration // when each queued request arrived
	away            []time.Duration // when each client away comes back
	work            float64         // requests' worth of CPU left to spend this step
	served, refused int
	waits           []time.Duration // of the admitted requests
}

const refusalCost = 0.3

func newClosedLoop(clients int, capacity float64, honor bool) *closedLoop {
	s := &closedLoop{capacity: capacity, honor: honor}
	rng := rand.New(rand.NewPCG(1, 2))
	s.l = New(Config{
		Target: 10 * time.Millisecond, // transport.DefaultShedTarget
		Now:    func() time.Duration { return s.now },
		Queued: func(context.Context) (time.Duration, bool) { return s.queued, true },
		Sample: func() time.Duration { return 0 },
		CPU:    func() time.Duration { return s.cpu },
		Rand:   rng.Uint32,
		Jitter: rng.Uint32,
	})
	for range clients {
		s.queue = append(s.queue, 0)
	}
	return s
}

// run moves the simulation on by d, in steps of a millisecond, and
// returns the goodput (answers a second), the refusals a second and the
// 90th percentile of the admitted requests' waits over d.
func (s *closedLoop) run(d time.Duration) (goodput, refused float64, p90 time.Duration) {
	const step = time.Millisecond
	procs := float64(runtime.GOMAXPROCS(0))
	s.served, s.refused, s.waits = 0, 0, s.waits[:0]
	for end := s.now + d; s.now < end; {
		s.now += step
		back := s.away[:0]
		for _, at := range s.away {
			if at <= s.now {
				s.queue = append(s.queue, s.now)
			} else {
				back = append(back, at)
			}
		}
		s.away = back
		s.work += s.capacity * step.Seconds()
		spent := 0.0
		for len(s.queue) > 0 && s.work >= 1 {
			s.queued = s.now - s.queue[0]
			s.queue = s.queue[1:]
			if retry := s.l.ShedCaller(context.Background(), ""); retry > 0 {
				s.work, spent = s.work-refusalCost, spent+refusalCost
				s.refused++
				if s.honor {
					s.away = append(s.away, s.now+time.Duration(retry)*time.Second)
				} else {
					s.queue = append(s.queue, s.now)
				}
				continue
			}
			s.work, spent = s.work-1, spent+1
			s.served++
			s.waits = append(s.waits, s.queued)
			s.queue = append(s.queue, s.now)
		}
		s.work = min(s.work, 1) // idle CPU time is not saved for later
		s.cpu += time.Duration(spent / s.capacity * procs * float64(time.Second))
	}
	slices.Sort(s.waits)
	if len(s.waits) > 0 {
		p90 = s.waits[len(s.waits)*9/10]
	}
	return float64(s.served) / d.Seconds(), float64(s.refused) / d.Seconds(), p90
}

// With many more clients than the process keeps up with, the shedder
// keeps the CPUs nearly busy: clients that honor Retry-After (sent away
// for 1 to 3 s at random) get at least nine tenths of the answers a
// second of no shedding, at an admitted wait within four times the
// target; clients that ignore it lose no more than the refusals' cost.
// With fewer clients than DefaultMinWaiting, all of them always waiting
// (this model's clients send again at once), nothing is refused.
func TestClosedLoopSettles(t *testing.T) {
	t.Parallel()
	const capacity = 16000.0
	for _, tc := range []struct {
		clients int
		honor   bool
	}{{2048, true}, {2048, false}, {1024, true}, {192, true}} {
		s := newClosedLoop(tc.clients, capacity, tc.honor)
		s.run(5 * time.Second)
		goodput, refused, p90 := s.run(10 * time.Second)
		t.Logf("%d clients, honor %v: goodput %.0f/s, refused %.0f/s, admitted p90 wait %v", tc.clients, tc.honor, goodput, refused, p90)
		switch {
		case tc.clients < DefaultMinWaiting:
			assert.Zero(t, refused, "%d clients wait %v: nothing refused", tc.clients, p90)
		case tc.honor:
			assert.GreaterOrEqual(t, goodput, 0.9*capacity, "%d clients, honor: the CPUs nearly busy", tc.clients)
			assert.Less(t, p90, 4*s.l.cfg.Target, "%d clients: the admitted wait near the target", tc.clients)
		default:
			assert.GreaterOrEqual(t, goodput, capacity-refusalCost*refused-0.02*capacity, "%d clients: no more lost than the refusals cost", tc.clients)
		}
	}
}
