// Command relay is two services in one binary, to show one trace across
// services: run with -stock URL it is the front service, whose
// GET /checkout/{id} asks the stock service for the item (GET /stock/{sku})
// and then prices it; run without, it is the stock service, which takes
// 180 ms to look an item up. Built with -toolexec=matrixexec, the front's
// request to the stock service carries the front's trace context
// (traceparent), so that exported to an OpenTelemetry backend the stock
// service's span is the child of the front's call, in one trace.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	stock := flag.String("stock", "", "the stock service's base URL (http://host:port); empty: be the stock service")
	flag.Parse()
	mux := http.NewServeMux()
	role := "stock"
	if *stock == "" {
		mux.HandleFunc("GET /stock/{sku}", lookup)
	} else {
		role = "front"
		mux.HandleFunc("GET /checkout/{id}", checkout(*stock))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	// The address goes to stdout so a driver can find the port.
	fmt.Printf("%s listening on %s\n", role, ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Printf("%s: shutdown: %v", role, err)
		}
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		log.Fatalf("%s: %v", role, err)
	}
}

// lookup is the stock service's slow route.
func lookup(w http.ResponseWriter, r *http.Request) {
	time.Sleep(180 * time.Millisecond)
	fmt.Fprintf(w, "%s: 7 left\n", r.PathValue("sku"))
}

// checkout asks the stock service, then prices the order.
func checkout(stock string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		left, err := ask(stock + "/stock/sku-" + r.PathValue("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		time.Sleep(40 * time.Millisecond) // pricing
		fmt.Fprintf(w, "order %s: %s", r.PathValue("id"), left)
	}
}

// ask sends GET url and returns the body.
func ask(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
