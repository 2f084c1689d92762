// Command benchserver is the HTTP service of group 3 of BENCHMARKS.md: a
// JSON quote endpoint with a few layers of ordinary functions (handler,
// service, repository, pricing, rendering) and no sleeps, so that the
// instrumentation, not a delay, is what a load test of it sees.
//
//	GET /quote/{id}  → {"id":…,"lines":[…],"total":…}
//	GET /health      → ok
//	GET /debug/beat  → the recorder's counters (beat.ReadStats)
//
// It prints "listening on ADDR" when it accepts connections and stops on
// SIGINT/SIGTERM. Built with matrixexec in zero-code mode and run with
// MATRIX_REPORT set, every request is a recorded dispatch.
package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	"syscall"
	"time"

	"github.com/matrixgo/matrix/beat"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	svc := newQuoteService(newCatalog(256))
	srv := &http.Server{Handler: newMux(svc), ReadHeaderTimeout: 5 * time.Second}
	fmt.Printf("listening on %s\n", ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func newMux(svc *quoteService) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	// The recorder's counters, to check that every request was a
	// recorded dispatch (all zero in a plain build).
	mux.HandleFunc("GET /debug/beat", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(beat.ReadStats())
	})
	mux.HandleFunc("GET /quote/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		q, err := svc.quote(r.Context(), id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		render(w, q)
	})
	return mux
}

type item struct {
	SKU   string
	Price int64 // cents
	Qty   int
	Class int
}

type catalog struct {
	orders map[int][]item
}

func newCatalog(n int) *catalog {
	c := &catalog{orders: make(map[int][]item, n)}
	for id := range n {
		items := make([]item, 3+id%5)
		for i := range items {
			items[i] = item{SKU: fmt.Sprintf("sku-%d-%d", id, i), Price: int64(100 + (id*37+i*11)%900), Qty: 1 + (id+i)%4, Class: (id + i) % 3}
		}
		c.orders[id] = items
	}
	return c
}

var errNotFound = errors.New("no such order")

// load returns a copy of the order's items.
func (c *catalog) load(ctx context.Context, id int) ([]item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	items, ok := c.orders[id%len(c.orders)]
	if !ok || id < 0 {
		return nil, errNotFound
	}
	out := make([]item, len(items))
	copy(out, items)
	return out, nil
}

type quoteLine struct {
	SKU      string `json:"sku"`
	Qty      int    `json:"qty"`
	Net      int64  `json:"net"`
	Discount int64  `json:"discount"`
	Tax      int64  `json:"tax"`
}

type quote struct {
	ID    int         `json:"id"`
	Lines []quoteLine `json:"lines"`
	Total int64       `json:"total"`
}

type quoteService struct {
	cat *catalog
	pr  *pricer
}

func newQuoteService(c *catalog) *quoteService {
	return &quoteService{cat: c, pr: &pricer{rates: [3]int64{0, 700, 2000}, bulk: 3}}
}

func (s *quoteService) quote(ctx context.Context, id int) (*quote, error) {
	items, err := s.cat.load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("quote %d: %w", id, err)
	}
	q := &quote{ID: id, Lines: make([]quoteLine, 0, len(items))}
	for _, it := range items {
		l, err := s.pr.line(it)
		if err != nil {
			return nil, fmt.Errorf("quote %d: %w", id, err)
		}
		q.Lines = append(q.Lines, l)
		q.Total += l.Net - l.Discount + l.Tax
	}
	return q, nil
}

type pricer struct {
	rates [3]int64 // tax per class, in 1/10000
	bulk  int
}

var errPrice = errors.New("bad price")

func (p *pricer) line(it item) (quoteLine, error) {
	if it.Price <= 0 || it.Qty <= 0 || it.Class < 0 || it.Class >= len(p.rates) {
		return quoteLine{}, fmt.Errorf("%s: %w", it.SKU, errPrice)
	}
	net := it.Price * int64(it.Qty)
	disc := p.discount(it, net)
	tax := p.tax(it.Class, net-disc)
	return quoteLine{SKU: it.SKU, Qty: it.Qty, Net: net, Discount: disc, Tax: tax}, nil
}

func (p *pricer) discount(it item, net int64) int64 {
	var d int64
	switch {
	case it.Qty >= p.bulk+1:
		d = net / 10
	case it.Qty >= p.bulk:
		d = net / 20
	}
	if it.Class == 0 && d > 0 {
		d = roundCents(d, 5)
	}
	return min(d, net)
}

func (p *pricer) tax(class int, amount int64) int64 {
	if amount <= 0 {
		return 0
	}
	t := amount * p.rates[class] / 10000
	if class == 2 {
		t = roundCents(t, 1)
	}
	return t
}

//go:noinline
func roundCents(v, step int64) int64 {
	if step <= 1 {
		return v
	}
	r := v % step
	if r*2 >= step {
		return v - r + step
	}
	return v - r
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func render(w http.ResponseWriter, q *quote) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(q); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Write(buf.Bytes())
}
