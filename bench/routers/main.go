// Command routerbench serves GET /fast and a route with a parameter on
// one of chi, gin, echo, a Go 1.22 ServeMux, fiber (on fasthttp's server)
// or hertz (on its own server and netpoll).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/hlog"
	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
)

func main() {
	router := flag.String("router", "chi", "chi, gin, echo, mux, fiber or hertz")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	var h http.Handler
	switch *router {
	case "chi":
		r := chi.NewRouter()
		r.Get("/fast", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
		r.Get("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "order %s\n", chi.URLParam(r, "id"))
		})
		h = r
	case "mux":
		m := http.NewServeMux()
		m.HandleFunc("GET /fast", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
		m.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "order %s\n", r.PathValue("id"))
		})
		h = m
	case "gin":
		gin.SetMode(gin.ReleaseMode)
		g := gin.New()
		g.GET("/fast", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
		g.GET("/orders/:id", func(c *gin.Context) { c.String(http.StatusOK, "order %s\n", c.Param("id")) })
		h = g
	case "echo":
		e := echo.New()
		e.HideBanner = true
		e.GET("/fast", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
		e.GET("/orders/:id", func(c echo.Context) error { return c.String(http.StatusOK, "order "+c.Param("id")+"\n") })
		h = e
	case "fiber":
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		app.Get("/fast", func(c *fiber.Ctx) error { return c.SendString("ok\n") })
		app.Get("/orders/:id", func(c *fiber.Ctx) error { return c.SendString("order " + c.Params("id") + "\n") })
		ln := listen(*addr)
		fmt.Printf("listening on %s\n", ln.Addr())
		app.Listener(ln)
		return
	case "hertz":
		ln := listen(*addr)
		hlog.SetLevel(hlog.LevelError)
		hz := server.New(server.WithListener(ln), server.WithDisablePrintRoute(true))
		hz.GET("/fast", func(_ context.Context, c *app.RequestContext) { c.WriteString("ok\n") })
		hz.GET("/orders/:id", func(_ context.Context, c *app.RequestContext) { c.WriteString("order " + c.Param("id") + "\n") })
		fmt.Printf("listening on %s\n", ln.Addr())
		hz.Run()
		return
	default:
		fmt.Fprintln(os.Stderr, "unknown router", *router)
		os.Exit(2)
	}
	ln := listen(*addr)
	fmt.Printf("listening on %s\n", ln.Addr())
	http.Serve(ln, h)
}

// listen listens on addr, or exits.
func listen(addr string) net.Listener {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return ln
}
