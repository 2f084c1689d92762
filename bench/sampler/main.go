// Command sampler serves one CPU-bound route (GET /decode, about 150 ms of
// encoding/json) and one fast route (GET /fast) in process, sends ROUNDS
// requests to each and prints the median latency of each and the process's
// CPU time per request. bench/sampler.sh builds it with matrixexec and runs
// it with the sampler on and off.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
)

var doc []byte

func decode() int {
	var v []map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		panic(err)
	}
	return len(v)
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	n, _ := strconv.Atoi(os.Getenv("ROUNDS"))
	if n <= 0 {
		n = 20
	}
	var items []map[string]any
	for i := range 60000 {
		items = append(items, map[string]any{"id": i, "name": fmt.Sprint("item-", i), "price": float64(i) / 7})
	}
	doc, _ = json.Marshal(items)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /decode", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, decode()) })
	mux.HandleFunc("GET /fast", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{"/decode", "/fast"} {
		var ds []time.Duration
		c0 := cpu()
		for range n {
			t := time.Now()
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				panic(err)
			}
			resp.Body.Close()
			ds = append(ds, time.Since(t))
		}
		slices.Sort(ds)
		fmt.Printf("%s median_us=%d cpu_us=%d\n", path, ds[len(ds)/2].Microseconds(), (cpu()-c0).Microseconds()/int64(n))
	}
}
