// Command stuck is a small HTTP service whose requests can be made slow or
// stuck, to show the lag/ANR watchdog:
//
//	go build -toolexec=matrixexec -o stuck ./examples/stuck
//	MATRIX_REPORT=stderr ./stuck -addr 127.0.0.1:8080
//
// GET /fast answers at once. GET /sleep?for=2500ms works (sleeps) for the
// given time in (*worker).crunch: past 2 s the watchdog reports it as LAG
// with its goroutine's stack. GET /block?for=6s starts an audit that holds
// the inventory lock for the given time, then waits for that lock in
// (*inventory).reserve: past 2 s it is a LAG, past 5 s an ANR whose call
// tree names reserve and whose threadStack shows it waiting in
// sync.(*Mutex).Lock. Meanwhile /fast keeps answering: the watchdog works on
// its own goroutine.
//
// Built with matrixexec inside this module the program gets zero-code mode:
// the trace plugin starts when MATRIX_REPORT is set, configured by the
// MATRIX_* variables (MATRIX_LAG_MS, MATRIX_ANR_MS, MATRIX_ANR).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("stuck: %v", err)
	}
	srv := &http.Server{Handler: newMux()}
	// The address goes to stdout so a driver can find the port.
	fmt.Printf("stuck listening on %s\n", ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Printf("stuck: shutdown: %v", err)
		}
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("stuck: %v", err)
	}
}

func newMux() *http.ServeMux {
	inv := &inventory{stock: map[string]int{"widget": 1 << 20}}
	w := &worker{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /fast", func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(rw, "ok")
	})
	mux.HandleFunc("GET /sleep", func(rw http.ResponseWriter, r *http.Request) {
		d, err := duration(r)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(rw, w.crunch(d))
	})
	mux.HandleFunc("GET /block", func(rw http.ResponseWriter, r *http.Request) {
		d, err := duration(r)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		locked := make(chan struct{})
		go inv.audit(d, locked)
		<-locked
		left, err := inv.reserve("widget")
		if err != nil {
			http.Error(rw, err.Error(), http.StatusConflict)
			return
		}
		fmt.Fprintln(rw, left)
	})
	return mux
}

// duration reads the "for" query parameter.
func duration(r *http.Request) (time.Duration, error) {
	d, err := time.ParseDuration(r.URL.Query().Get("for"))
	if err != nil {
		return 0, fmt.Errorf("for: %w", err)
	}
	if d < 0 || d > time.Minute {
		return 0, fmt.Errorf("for: %v out of range 0..1m", d)
	}
	return d, nil
}

// worker does slow work.
type worker struct {
	mu   sync.Mutex
	runs int
}

// crunch stands for a slow computation that takes d.
func (w *worker) crunch(d time.Duration) string {
	w.mu.Lock()
	w.runs++
	n := w.runs
	w.mu.Unlock()
	deadline := time.Now().Add(d)
	steps := 0
	for time.Now().Before(deadline) {
		time.Sleep(min(time.Until(deadline), 50*time.Millisecond))
		steps++
	}
	return "run " + strconv.Itoa(n) + ": " + strconv.Itoa(steps) + " steps"
}

// inventory is stock behind one lock.
type inventory struct {
	mu    sync.Mutex
	stock map[string]int
}

// audit holds the inventory lock for d, as a long maintenance job would.
// It closes locked once it holds the lock.
func (inv *inventory) audit(d time.Duration, locked chan<- struct{}) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	close(locked)
	total := 0
	for _, n := range inv.stock {
		total += n
	}
	time.Sleep(d)
	if total < 0 {
		log.Printf("stuck: audit: negative stock %d", total)
	}
}

// reserve takes one item of sku; it waits for the inventory lock.
func (inv *inventory) reserve(sku string) (int, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	n := inv.stock[sku]
	if n == 0 {
		return 0, fmt.Errorf("reserve %s: out of stock", sku)
	}
	inv.stock[sku] = n - 1
	return n - 1, nil
}
