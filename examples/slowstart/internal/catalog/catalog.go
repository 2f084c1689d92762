// Package catalog stands for a dependency whose initialisation is slow: its
// init loads a product catalog before the program's main even begins, the
// kind of start-up cost Matrix's start-up tracer names.
//
// The load takes SLOWSTART_INIT_DELAY (a Go duration, default 6s).
package catalog

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

var products []string

func init() {
	products = loadCatalog(initDelay())
}

func initDelay() time.Duration {
	v := os.Getenv("SLOWSTART_INIT_DELAY")
	if v == "" {
		return 6 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "catalog: SLOWSTART_INIT_DELAY=%q: %v\n", v, err)
		os.Exit(2)
	}
	return d
}

// loadCatalog fetches the catalog's index (slow: it stands for a remote
// call) and builds the product list from it.
func loadCatalog(delay time.Duration) []string {
	index := fetchIndex(delay)
	list := buildProducts(index)
	if len(list) == 0 {
		panic(fmt.Sprintf("catalog: empty index after %v", delay))
	}
	return list
}

// fetchIndex stands for a slow round trip to a catalog service.
func fetchIndex(delay time.Duration) string {
	time.Sleep(delay)
	var b strings.Builder
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&b, "sku-%03d,", 16-i)
	}
	return b.String()
}

func buildProducts(index string) []string {
	var list []string
	for _, f := range strings.Split(index, ",") {
		if f = strings.TrimSpace(f); f != "" {
			list = append(list, strings.ToUpper(f))
		}
	}
	sort.Strings(list)
	return list
}

// Products returns the catalog's products.
func Products() []string { return products }
