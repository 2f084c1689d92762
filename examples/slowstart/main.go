// Command slowstart is an HTTP service that starts slowly, to show what
// Matrix for Go's start-up tracer reports. A dependency
// (internal/catalog) spends SLOWSTART_INIT_DELAY (default 6s) in its init,
// then main spends SLOWSTART_SETUP_DELAY (default 1s) warming a cache
// before it serves. The first request served makes the process ready.
//
//	go build -toolexec=matrixexec -o slowstart ./examples/slowstart
//	MATRIX_REPORT=stderr MATRIX_COLD_STARTUP_MS=5000 ./slowstart -addr 127.0.0.1:8080 &
//	curl 127.0.0.1:8080/products
//
// gives a Trace_StartUp report (application_create ≈ 6000 ms: package
// initialisation; first_activity_create ≈ 1000 ms: main until the first
// request was served; startup_duration, their sum) and, since the start-up
// took longer than MATRIX_COLD_STARTUP_MS, a Trace_EvilMethod report with
// detail STARTUP whose call tree names catalog.init.0 → catalog.loadCatalog
// → catalog.fetchIndex. No line of this program mentions Matrix: in this
// module, matrixexec links the tracer in (zero-code mode) and MATRIX_REPORT
// starts it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/matrixgo/matrix/examples/slowstart/internal/catalog"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	cache := warmCache(envDuration("SLOWSTART_SETUP_DELAY", time.Second))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("slowstart: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /products", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(cache); err != nil {
			log.Printf("slowstart: write: %v", err)
		}
	})
	// The address goes to stdout so a driver can find the port.
	fmt.Printf("slowstart listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

// warmCache stands for the slow setup a service does in main before it
// serves (connection pools, caches).
func warmCache(delay time.Duration) map[string]string {
	time.Sleep(delay)
	cache := map[string]string{}
	for _, p := range catalog.Products() {
		cache[p] = strings.ToLower(p)
	}
	return cache
}

func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		log.Fatalf("slowstart: %s: %v", name, err)
	}
	return d
}
