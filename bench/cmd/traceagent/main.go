// Command traceagent stands in for a Datadog agent on 127.0.0.1 for
// bench/service.sh: it answers 200 to every request (trace payloads on
// /v0.4/traces and /v0.5/traces, stats, telemetry, /info) and appends the
// body of each trace payload to a file, so that the benchmark can read what
// the tracer sent (span names and resources are plain strings in its
// MessagePack).
//
//	traceagent -addr 127.0.0.1:8126 -o traces.bin
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8126", "listen address")
	out := flag.String("o", "traces.bin", "file the trace payloads are appended to")
	flag.Parse()
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatalf("traceagent: %v", err)
	}
	var mu sync.Mutex
	var payloads int
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.Contains(r.URL.Path, "/traces") {
			mu.Lock()
			payloads++
			_, err := f.Write(body)
			mu.Unlock()
			if err != nil {
				log.Printf("traceagent: %v", err)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/info" {
			fmt.Fprint(w, `{"endpoints":["/v0.4/traces"]}`)
			return
		}
		fmt.Fprint(w, "{}")
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
