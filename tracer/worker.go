package tracer

// worker is the lifecycle of a tracer's goroutine: at most one runs between
// begin and halt, and halt waits for it to return. The tracer holds its own
// lock around these calls.
type worker struct {
	stop chan struct{} // closed by halt
	done chan struct{} // closed when the goroutine has returned
}

// running reports whether the goroutine was started and not halted.
func (w *worker) running() bool { return w.stop != nil }

// begin makes the channels of a new goroutine, which the caller starts
// (so that stack dumps say which tracer created it) and which must close
// done when it returns, after stop is closed. ok is false if one runs
// already.
func (w *worker) begin() (stop <-chan struct{}, done chan<- struct{}, ok bool) {
	if w.running() {
		return nil, nil, false
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	return w.stop, w.done, true
}

// halt closes stop and waits for the goroutine to return.
func (w *worker) halt() {
	if !w.running() {
		return
	}
	close(w.stop)
	<-w.done
	w.stop, w.done = nil, nil
}
