package ratelimit

import "time"

// Scaled returns a clock that starts at start and runs factor times as fast as the real one: its Now advances
// factor seconds a second, and its After(d) fires after d/factor of real time. It is for tests and benchmarks that
// live through hours of a provider's batches in seconds: the simulator's Config.Now and the activities' Clock on
// one Scaled clock see the same hours pass.
func Scaled(start time.Time, factor float64) Clock {
	return scaledClock{origin: time.Now(), start: start, factor: factor}
}

type scaledClock struct {
	origin, start time.Time
	factor        float64
}

func (c scaledClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.origin)) * c.factor))
}

func (c scaledClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	time.AfterFunc(time.Duration(float64(d)/c.factor), func() { ch <- c.Now() })
	return ch
}
