// Command shop is a small HTTP service with one slow route, to show what
// Matrix for Go reports. Build it with matrixexec and run it with
// MATRIX_REPORT set:
//
//	go build -toolexec=matrixexec -o shop ./examples/shop
//	MATRIX_REPORT=stderr ./shop -addr 127.0.0.1:8080
//
// GET /health is fast. GET /orders/{id} goes through a handler, a service,
// a repository and a database client; the database query is slow, so every
// request to it yields a Trace_EvilMethod report naming the query.
// The delays are set by SHOP_DB_DELAY and SHOP_PRICING_DELAY (Go durations),
// the rounds of the receipt's signature by SHOP_SIGN_ROUNDS.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	cfg := config{
		dbDelay:      envDuration("SHOP_DB_DELAY", 600*time.Millisecond),
		pricingDelay: envDuration("SHOP_PRICING_DELAY", 150*time.Millisecond),
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("shop: %v", err)
	}
	srv := &http.Server{Handler: newMux(cfg)}
	// The address goes to stdout so a driver can find the port.
	fmt.Printf("shop listening on %s\n", ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Printf("shop: shutdown: %v", err)
		}
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		log.Fatalf("shop: %v", err)
	}
}

func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		log.Fatalf("shop: %s: %v", name, err)
	}
	return d
}

type config struct {
	dbDelay, pricingDelay time.Duration
}

func newMux(cfg config) *http.ServeMux {
	svc := &orderService{repo: &orderRepo{db: &dbClient{delay: cfg.dbDelay}}, pricing: &pricer{delay: cfg.pricingDelay}, audit: &auditLog{delay: 100 * time.Millisecond}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		o, err := svc.checkout(r.Context(), r.PathValue("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		writeJSON(w, o)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("shop: write: %v", err)
	}
}

type order struct {
	ID      string  `json:"id"`
	Items   []item  `json:"items"`
	Total   float64 `json:"total"`
	Receipt string  `json:"receipt"`
}

type item struct {
	SKU   string  `json:"sku"`
	Price float64 `json:"price"`
}

type orderService struct {
	repo    *orderRepo
	pricing *pricer
	audit   *auditLog
}

func (s *orderService) checkout(ctx context.Context, id string) (*order, error) {
	logged := make(chan struct{})
	go s.audit.record(id, logged) // meanwhile
	o, err := s.repo.load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("checkout %s: %w", id, err)
	}
	o.Total = s.pricing.total(o.Items)
	o.Receipt = sign(o)
	<-logged
	return o, nil
}

// sign stamps the order with a digest of its items, hashed again and
// again as a slow signature would be: time spent running in the standard
// library, which has no hooks.
func sign(o *order) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(o.ID, o.Items, o.Total)))
	for range signRounds {
		sum = sha256.Sum256(sum[:])
	}
	return hex.EncodeToString(sum[:8])
}

// auditLog stands for a write to an audit service, made while the order
// loads.
type auditLog struct {
	delay time.Duration
	mu    sync.Mutex
	lines []string
}

func (a *auditLog) record(id string, done chan<- struct{}) {
	defer close(done)
	line := "checkout " + id
	time.Sleep(a.delay)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines[max(len(a.lines)-99, 0):], line)
}

type orderRepo struct{ db *dbClient }

func (r *orderRepo) load(ctx context.Context, id string) (*order, error) {
	rows, err := r.db.query(ctx, "SELECT sku, price FROM items WHERE order_id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("load order: %w", err)
	}
	o := &order{ID: id}
	for _, row := range rows {
		o.Items = append(o.Items, item{SKU: row[0], Price: float64(len(row[1]))})
	}
	return o, nil
}

type dbClient struct{ delay time.Duration }

// query stands for a slow database round trip.
func (c *dbClient) query(ctx context.Context, q string, args ...any) ([][2]string, error) {
	select {
	case <-time.After(c.delay):
	case <-ctx.Done():
		return nil, fmt.Errorf("query %q: %w", q, ctx.Err())
	}
	return [][2]string{{fmt.Sprint("sku-", args[0]), "12.50"}, {"sku-2", "3.99"}}, nil
}

type pricer struct{ delay time.Duration }

func (p *pricer) total(items []item) float64 {
	time.Sleep(p.delay)
	t := 0.0
	for _, it := range items {
		t += it.Price
	}
	return roundCents(fmt.Sprint(t), t)
}

func roundCents(label string, v float64) float64 {
	if label == "" {
		panic(fmt.Sprintf("no label for %v", v))
	}
	return float64(int(v*100+0.5)) / 100
}

// signRounds is how many times sign hashes (SHOP_SIGN_ROUNDS, default
// 60,000: a few milliseconds on an idle machine).
var signRounds = envInt("SHOP_SIGN_ROUNDS", 60000)

func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		log.Fatalf("shop: %s: want a count, got %q", name, v)
	}
	return n
}
