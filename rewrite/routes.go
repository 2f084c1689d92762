package rewrite

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/matrixgo/matrix/inject"
	"github.com/matrixgo/matrix/internal/abi"
)

// A routeRule names the scene of the requests a router serves, or makes
// each call an RPC server handles a dispatch: statements added to the
// third-party package where it matches a route, so that no program has to
// change. A rule is declared by the package's import path, and each of its
// hooks by function, signature and, for a statement added in the middle of
// a body, the statement it follows or the if statement it precedes: the
// shape the statements rely on. A package in which any of them is not
// found (another version of the module) is left untouched and the build
// goes on (PatchRoutes's note).
type routeRule struct {
	hooks []routeHook
	// needs are members the statements use besides the parameters, each
	// "Type.name": a field of struct type Type or a method on it, or a
	// package-level variable's or function's name.
	needs []string
	// decls, if set, returns a declarations file the statements need
	// besides inject.Route's (its name, and its content for the package
	// clause's name pkgName).
	decls func(pkgName string) (name string, content []byte)
}

// A routeHook is a statement added to one function of a rule's package.
type routeHook struct {
	recv, name string // receiver type (without *) and function name
	// params is the function's parameter list as printed, receiver
	// excluded ("c *Context"): the names and types text uses.
	params string
	// after, if set, is a statement of the body, as printed, after which
	// text goes (on its line); before, if set, an if statement or a
	// simple statement of the body, as printed, before which text goes;
	// otherwise text goes at the top of the body.
	after, before string
	text          string
}

// chiRouting returns a rule of chi's that names a request where a router
// serves it, in routeHTTP: named where the router found the request's
// handler (its function and parameters are filled in), and unmatched
// before notFound, the if statement that answers a request for which it
// found none. needs are members named uses besides those.
func chiRouting(named routeHook, notFound string, needs ...string) routeRule {
	const fn, params = "routeHTTP", "w http.ResponseWriter, r *http.Request"
	named.recv, named.name, named.params = "Mux", fn, params
	return routeRule{
		needs: append([]string{"Context.RouteMethod", "Context.methodNotAllowed"}, needs...),
		hooks: []routeHook{named, {recv: "Mux", name: fn, params: params,
			before: notFound, text: `__matrix_rt_route(rctx.RouteMethod, ""); `}},
	}
}

// The places of chi's routeHTTP that chiRouting's rules name a request at.
var (
	// chiPattern: since v5.3 the router sets the full pattern on the
	// request before it calls the handler.
	chiPattern = routeHook{after: "r.Pattern = rctx.RoutePattern()",
		text: "; __matrix_rt_route(rctx.RouteMethod, r.Pattern)"}
	// chiRoutePattern: before v5.3 it sets none (or only its own part), and
	// the pattern is taken just before it calls the handler, only by a
	// goroutine that records (RoutePattern joins and rewrites strings).
	chiRoutePattern = routeHook{before: "h.ServeHTTP(w, r)",
		text: "if __matrix_rt_active() { __matrix_rt_route(rctx.RouteMethod, rctx.RoutePattern()) }; "}
	// chiNotFound answers a request without a handler since v5.0.11;
	// chiNotFoundV500 before.
	chiNotFound     = "if rctx.methodNotAllowed {\n\tmx.MethodNotAllowedHandler(rctx.methodsAllowed...).ServeHTTP(w, r)\n} else {\n\tmx.NotFoundHandler().ServeHTTP(w, r)\n}"
	chiNotFoundV500 = "if rctx.methodNotAllowed {\n\tmx.MethodNotAllowedHandler().ServeHTTP(w, r)\n} else {\n\tmx.NotFoundHandler().ServeHTTP(w, r)\n}"
)

// kindRPC is the dispatch kind of a call an RPC server handles, and
// kindMessage of a message a subscription's handler processes.
const (
	kindRPC     = int(abi.KindRPC)
	kindMessage = int(abi.KindMessage)
)

// routeRules are the routers and RPC servers whose requests get their
// route template, or RPC method, as the scene. Each sets "METHOD unmatched"
// first, and the template once the router matched one: a request that
// matches no route never has its path as the scene. A package whose
// releases differ in shape has a rule per shape, newest first: the first
// that fits is applied.
var routeRules = sync.OnceValue(func() map[string][]routeRule {
	return map[string][]routeRule{
		// gin: the engine's match, with the route's full path (groups
		// included). A request is named unmatched where gin finds no route
		// (in the method's tree, or no tree for the method), not before every
		// match: a matched request then costs one scene hook, not two. Older
		// releases name every request unmatched first.
		"github.com/gin-gonic/gin": {{
			needs: []string{"Context.Request", "Context.fullPath", "Context.handlers", "Engine.allNoRoute", "Engine.allNoMethod"},
			hooks: []routeHook{
				{recv: "Engine", name: "handleHTTPRequest", params: "c *Context",
					after: "value := root.getValue(rPath, c.params, c.skippedNodes, unescape)",
					text:  `; if value.handlers == nil { __matrix_rt_route(c.Request.Method, "") }`},
				{recv: "Engine", name: "handleHTTPRequest", params: "c *Context",
					after: "c.fullPath = value.fullPath",
					text:  "; __matrix_rt_route(c.Request.Method, c.fullPath)"},
				{recv: "Engine", name: "handleHTTPRequest", params: "c *Context",
					after: "c.handlers = engine.allNoMethod",
					text:  `; __matrix_rt_route(c.Request.Method, "")`},
				{recv: "Engine", name: "handleHTTPRequest", params: "c *Context",
					after: "c.handlers = engine.allNoRoute",
					text:  `; __matrix_rt_route(c.Request.Method, "")`},
			},
		}, {
			needs: []string{"Context.Request", "Context.fullPath"},
			hooks: []routeHook{
				{recv: "Engine", name: "handleHTTPRequest", params: "c *Context",
					text: `__matrix_rt_route(c.Request.Method, ""); `},
				{recv: "Engine", name: "handleHTTPRequest", params: "c *Context",
					after: "c.fullPath = value.fullPath",
					text:  "; __matrix_rt_route(c.Request.Method, c.fullPath)"},
			},
		}},
		// echo v4: the router's match, with the route's path as registered
		// (groups included). A route registered with RouteNotFound is the
		// node's notFoundHandler: its requests matched no route. A request is
		// named unmatched where the router finds no route (nothing at all, no
		// handler for the path, or a RouteNotFound route), not before every
		// match: a matched request then costs one scene hook, not two. Older
		// releases name every request unmatched first.
		"github.com/labstack/echo/v4": {{
			needs: []string{"node.notFoundHandler"},
			hooks: []routeHook{
				{recv: "Router", name: "Find", params: "method, path string, c Context",
					before: "if currentNode == nil && previousBestMatchNode == nil {\n\treturn\n}",
					text:   `if currentNode == nil && previousBestMatchNode == nil { __matrix_rt_route(method, "") }; `},
				{recv: "Router", name: "Find", params: "method, path string, c Context",
					after: "ctx.handler = matchedRouteMethod.handler",
					text:  `; if matchedRouteMethod != currentNode.notFoundHandler { __matrix_rt_route(method, rPath) } else { __matrix_rt_route(method, "") }`},
				{recv: "Router", name: "Find", params: "method, path string, c Context",
					after: "ctx.handler = NotFoundHandler",
					text:  `; __matrix_rt_route(method, "")`},
			},
		}, {
			needs: []string{"node.notFoundHandler"},
			hooks: []routeHook{
				{recv: "Router", name: "Find", params: "method, path string, c Context",
					text: `__matrix_rt_route(method, ""); `},
				{recv: "Router", name: "Find", params: "method, path string, c Context",
					after: "ctx.handler = matchedRouteMethod.handler",
					text:  "; if matchedRouteMethod != currentNode.notFoundHandler { __matrix_rt_route(method, rPath) }"},
			},
		}},
		// chi v5: each router's routing of the request it serves; a mounted
		// router routes after the router it is mounted on, and the pattern
		// joins the patterns of both. A request for which a router finds no
		// handler is unmatched; one it routes is named once, after its
		// pattern: the one the router has just set on the request, or in
		// releases that set none (or only the router's own part, before
		// v5.3), RoutePattern just before the handler runs. Lookups that serve
		// nothing (Match and Find, which middleware and handlers call to look
		// ahead) leave the scene alone. A release of yet another shape is named
		// in FindRoute, which such lookups call too.
		"github.com/go-chi/chi/v5": {
			chiRouting(chiPattern, chiNotFound),
			chiRouting(chiRoutePattern, chiNotFound, "Context.RoutePattern"),
			chiRouting(chiRoutePattern, chiNotFoundV500, "Context.RoutePattern"),
			{
				needs: []string{"Context.RouteMethod", "Context.RoutePattern"},
				hooks: []routeHook{
					{recv: "node", name: "FindRoute", params: "rctx *Context, method methodTyp, path string",
						after: "rn := n.findRoute(rctx, method, path)",
						text:  `; if rn == nil || __matrix_rt_active() && rn.endpoints[method].pattern == "" { __matrix_rt_route(rctx.RouteMethod, "") }`},
					{recv: "node", name: "FindRoute", params: "rctx *Context, method methodTyp, path string",
						after: "rctx.RoutePatterns = append(rctx.RoutePatterns, rctx.routePattern)",
						text:  "; if __matrix_rt_active() { __matrix_rt_route(rctx.RouteMethod, rctx.RoutePattern()) }"},
				},
			}},
		// gorilla/mux: the router's match; a subrouter's route has the full
		// path template.
		"github.com/gorilla/mux": {{
			needs: []string{"Route.GetPathTemplate", "RouteMatch.Route", "RouteMatch.MatchErr"},
			hooks: []routeHook{
				{recv: "Router", name: "ServeHTTP", params: "w http.ResponseWriter, req *http.Request",
					text: `__matrix_rt_route(req.Method, ""); `},
				{recv: "Router", name: "ServeHTTP", params: "w http.ResponseWriter, req *http.Request",
					after: "handler = match.Handler",
					text:  "; if match.Route != nil && match.MatchErr == nil { __matrix_rt_template(req.Method, match.Route) }"},
			},
		}},
		// httprouter keeps no route's path past its registration: each
		// handle is wrapped where it is registered. (Its module declares no
		// Go version: the statements are Go 1.7's.)
		"github.com/julienschmidt/httprouter": {{
			hooks: []routeHook{
				{recv: "Router", name: "ServeHTTP", params: "w http.ResponseWriter, req *http.Request",
					text: `__matrix_rt_route(req.Method, ""); `},
				{recv: "Router", name: "Handle", params: "method, path string, handle Handle",
					text: "if handle != nil { handle = " + namedWrapper("Handle", "", "w http.ResponseWriter, r *http.Request, p Params", "h(w, r, p)") +
						"(handle, __matrix_rt_name(method, path)) }; "},
			},
		}},
		// echo v5: the router hands every request's route to its context
		// (InitializeRoute), the route's path as registered (groups included)
		// when it matched one, and an empty path or a RouteNotFound route's
		// when it matched none: those are unmatched. The scene's method is the
		// request's (a HEAD request routed to a GET route stays HEAD).
		"github.com/labstack/echo/v5": {{
			needs: []string{"Context.request", "RouteInfo.Method", "RouteInfo.Path"},
			hooks: []routeHook{
				{recv: "Context", name: "InitializeRoute", params: "ri *RouteInfo, pathValues *PathValues",
					text: `if ri.Path != "" && ri.Method != RouteNotFound { __matrix_rt_route(c.request.Method, ri.Path) } else { __matrix_rt_route(c.request.Method, "") }; `},
			},
		}},
		// connect (v1): each procedure's handler names the request after its
		// procedure, "POST /acme.foo.v1.FooService/Bar", whichever router
		// mounted it (a ServeMux knows only the service's prefix).
		"connectrpc.com/connect": {{
			needs: []string{"Handler.spec", "Spec.Procedure"},
			hooks: []routeHook{
				{recv: "Handler", name: "ServeHTTP", params: "responseWriter http.ResponseWriter, request *http.Request",
					text: "__matrix_rt_route(request.Method, h.spec.Procedure); "},
			},
		}},
		// connect v2: the handler its HTTP transport mounts for each
		// procedure names the request after it. Mount's catch-all for a
		// service builds such a handler for each request of an unknown
		// method, with the request's path as its procedure: the procedures
		// Mount mounted are kept, and a request for any other is unmatched.
		"connectrpc.com/connect/v2/connecthttp": {{
			needs: []string{"handler.spec", "newProcedureHandler", "newUnknownMethodHandler"},
			hooks: []routeHook{
				{name: "Mount", params: "mux ServeMux, server *connect.Server, options ...Option",
					after: "mux.Handle(spec.Procedure, newProcedureHandler(server, spec, &opts))",
					text:  "; __matrix_rt_connect_mounted(spec.Procedure)"},
				{recv: "handler", name: "ServeHTTP", params: "responseWriter http.ResponseWriter, request *http.Request",
					text: "__matrix_rt_connect_route(request.Method, h.spec.Procedure); "},
			},
			decls: connectDecls,
		}},
		// grpc-gateway (v2): the handlers it generates annotate each request's
		// context with the route's path template ("/v1/orders/{id}", a
		// constant of the generated code) before they call the service: the
		// request is named after it there, while it records.
		"github.com/grpc-ecosystem/grpc-gateway/v2/runtime": {{
			needs: []string{"HTTPPathPattern", "DefaultContextTimeout"},
			hooks: []routeHook{
				{name: "annotateContext", params: "ctx context.Context, mux *ServeMux, req *http.Request, rpcMethodName string, options ...AnnotateContextOption",
					before: "timeout := DefaultContextTimeout",
					text:   "if __matrix_rt_active() { if p, ok := HTTPPathPattern(ctx); ok { __matrix_rt_route(req.Method, p) } }; "},
			},
		}},
		// go-zero's REST router keeps no route's path past its registration
		// either: each route's handler (go-zero's middleware chain with the
		// route's function at its end) is wrapped where the router registers
		// it, so that the request is named on its own goroutine before the
		// chain runs (its timeout middleware runs the rest on another). A
		// request is unmatched where the router finds no route for it.
		"github.com/zeromicro/go-zero/rest/router": {{
			needs: []string{"patRouter.trees", "patRouter.notFound"},
			hooks: []routeHook{
				{recv: "patRouter", name: "Handle", params: "method, reqPath string, handler http.Handler",
					text: "if handler != nil { handler = " + namedWrapper("http.Handler", "http.HandlerFunc", "w http.ResponseWriter, r *http.Request", "h.ServeHTTP(w, r)") +
						"(handler, __matrix_rt_name(method, path.Clean(reqPath))) }; "},
				{recv: "patRouter", name: "ServeHTTP", params: "w http.ResponseWriter, r *http.Request",
					before: "allows, ok := pr.methodsAllowed(r.Method, reqPath)",
					text:   `__matrix_rt_route(r.Method, ""); `},
			},
		}},
		// fiber v2: the app's match, with the route's path as registered
		// (groups and mounted apps included). A route a middleware is used on
		// (route.use) matches a prefix and names nothing: the request is
		// named by the route that handles it, once its middleware passes it
		// on, and unmatched where fiber answers 404 for want of any. The
		// request itself is a dispatch of fasthttp's server (below).
		"github.com/gofiber/fiber/v2": {fiberRouting("Ctx", "c.method",
			`err := NewError(StatusNotFound, "Cannot "+c.method+" "+html.EscapeString(c.pathOriginal))`, "Ctx.method")},
		// fiber v3: as v2, with its default context (a custom context keeps
		// the scene "http").
		"github.com/gofiber/fiber/v3": {fiberRouting("DefaultCtx", "c.Method()",
			"if c.matched {\n\treturn false, ErrNotFound\n}", "DefaultReq.Method")},
		// fasthttp: every request its server hands to the handler is a
		// dispatch, as net/http's are (see fastServe), a server entering its
		// accept loop makes the service ready, and each attempt of a client
		// request is a boundary (fastClient). The function that serves
		// a connection was split in v1.7x: newest first.
		"github.com/valyala/fasthttp": {
			fastServe("serveConnCounted", "c net.Conn, countConcurrency bool"),
			fastServe("serveConn", "c net.Conn"),
		},
		// hertz: every request its HTTP/1 server hands to the engine is a
		// dispatch, as fasthttp's are (see hertzServe); the engine's match
		// names the scene after the route's full path (groups included), and
		// a request it answers with an error for want of a route (404, 405, or
		// 400 for a request it cannot route) is unmatched. The tree's method
		// names the route: the request's own method is a string over bytes
		// the server reuses. Run makes the service ready.
		"github.com/cloudwego/hertz/pkg/route": {{
			needs: []string{"router.method", "nodeValue.fullPath", "nodeValue.handlers"},
			hooks: []routeHook{
				{recv: "Engine", name: "Run", params: "", text: "__matrix_rt_serving(); "},
				{recv: "Engine", name: "ServeHTTP", params: "c context.Context, ctx *app.RequestContext",
					after: "ctx.SetFullPath(value.fullPath)",
					text:  "; __matrix_rt_route(t[i].method, value.fullPath)"},
				{name: "serveError", params: "c context.Context, ctx *app.RequestContext, code int, defaultMessage []byte",
					text: `if __matrix_rt_active() { __matrix_rt_route(__matrix_rt_method(ctx.Request.Header.Method()), "") }; `},
			},
		}},
		// hertz's HTTP/1 server and client: each request the server hands to
		// its engine (s.Core) is a dispatch, and each attempt of a host
		// client's request a boundary (fastClient: the same fields). Releases
		// before v0.4 hand the engine the connection's context.
		"github.com/cloudwego/hertz/pkg/protocol/http1": {
			hertzServe("cc"),
			hertzServe("c"),
		},
		// NATS: each message an asynchronous subscription's handler processes
		// is a dispatch of kind message named "nats", begun on the
		// subscription's goroutine where it calls the handler, with the
		// subscription's subject (a pattern when it has wildcards: bounded) as
		// its scene, and the message's W3C trace context when its headers carry
		// one (NATS header keys are case-sensitive: "traceparent", as
		// OpenTelemetry's propagator writes it, or "Traceparent"). The call is
		// not deferred around: the client recovers no handler's panic. A
		// JetStream push subscription receives on a delivery subject (an inbox
		// for an ephemeral consumer): its scene is the subject the program
		// subscribed to. Releases before JetStream (no jsi) get the rule
		// without it. Each message the connection publishes (Publish,
		// PublishMsg, a request, JetStream's publish) is a boundary, which
		// passes the dispatch's trace context on in the message's headers
		// (natsPublish); releases whose publish is shaped otherwise get the
		// rule without it.
		"github.com/nats-io/nats.go": {
			natsRule(true, &natsPublishV149), natsRule(true, &natsPublishV148), natsRule(true, &natsPublishV111),
			natsRule(true, nil), natsRule(false, nil),
		},
		// NATS JetStream (the jetstream package): a pull consumer's Consume
		// receives on an inbox of its own through an asynchronous subscription
		// (above); the handler it is given is wrapped so that each message is
		// named after the consumer's filter subject, when it has one, or else
		// its stream: never the inbox, which changes with every Consume.
		"github.com/nats-io/nats.go/jetstream": {{
			needs: []string{"pullConsumer.stream", "pullConsumer.CachedInfo", "ConsumerInfo.Config", "ConsumerConfig.FilterSubject", "ConsumerConfig.FilterSubjects"},
			hooks: []routeHook{
				{recv: "pullConsumer", name: "Consume", params: "handler MessageHandler, opts ...PullConsumeOpt",
					text: "if handler != nil { __matrix_rt_s := p.stream; if i := p.CachedInfo(); i != nil { if i.Config.FilterSubject != \"\" { __matrix_rt_s = i.Config.FilterSubject } else if len(i.Config.FilterSubjects) == 1 { __matrix_rt_s = i.Config.FilterSubjects[0] } }; " +
						"handler = " + namedWrapper("MessageHandler", "", "msg Msg", "h(msg)") + "(handler, __matrix_rt_s) }; "},
			},
		}},
		// gRPC: every unary and streaming call the server handles, and every
		// call a client makes, every message a client stream sends or receives
		// (a boundary named by its method and target). The server's shape
		// changed twice: releases up to v1.59 handle a call with the server
		// transport and a *transport.Stream, v1.60 to v1.68 add the context
		// before them, v1.69 on take a *transport.ServerStream alone, and the
		// newest handle unary and streaming calls in one function
		// (processRPC). Each stream has a Method.
		"google.golang.org/grpc": {
			grpcServer("processRPC", "ctx context.Context, stream *transport.ServerStream"),
			grpcServer("", "ctx context.Context, stream *transport.ServerStream"),
			grpcServer("", "ctx context.Context, t transport.ServerTransport, stream *transport.Stream"),
			grpcServer("", "t transport.ServerTransport, stream *transport.Stream"),
		},
	}
})

// fiberRouting returns a rule of fiber's, in (*App).next, whose context
// parameter is a *ctxType: a route that is not middleware names the
// request once it matched, and the request is unmatched before notFound,
// where the route stack ran out, if no such route matched; method is the
// request's method there. needs are members these use besides those of
// every release.
func fiberRouting(ctxType, method, notFound string, needs ...string) routeRule {
	params := "c *" + ctxType
	return routeRule{
		needs: append([]string{"Route.Path", "Route.Method", "Route.use", ctxType + ".route", ctxType + ".matched"}, needs...),
		hooks: []routeHook{
			{recv: "App", name: "next", params: params, after: "c.route = route",
				text: "; if !route.use { __matrix_rt_route(route.Method, route.Path) }"},
			{recv: "App", name: "next", params: params, before: notFound,
				text: "if !c.matched { __matrix_rt_route(" + method + `, "") }; `},
		},
	}
}

// fastServe returns a rule of fasthttp's, whose function fn (with the
// parameter list params) serves a connection's requests in a loop: each
// call of the handler is a dispatch of kind HTTP, begun in fn's frame
// (the frame that calls the handler, as net/http's serverHandler.ServeHTTP
// is) with the request's method, host, scheme and trace context, and
// ended with its status code once the handler returns. The request's
// header and host are read before the dispatch begins, so that its call
// tree is the handler's alone; the header by its canonical key, as the
// server stored it, without Peek's canonicalization of the key. The server
// reuses the request's bytes, so they are copied, only while recording
// (__matrix_rt_method, __matrix_rt_host, __matrix_rt_trace_bytes).
//
// The handler's call is not deferred around: fasthttp recovers no
// handler's panic, which ends the program, and a dispatch whose frame a
// program's own recover unwinds is abandoned, as any other (beat.Begin).
func fastServe(fn, params string) routeRule {
	header := func(key string) string { return "ctx.Request.Header.peek(__matrix_rt_" + key + "_key)" }
	begin := beginReused(header, "ctx.Method()", "ctx.Host()", "ctx.IsTLS()")
	return routeRule{
		needs: []string{"RequestCtx.Method", "RequestCtx.Host", "RequestCtx.IsTLS", "RequestCtx.Request", "RequestCtx.Response",
			"Request.Header", "RequestHeader.peek", "Response.StatusCode", "RequestHeader.Method", "HostClient.Addr", "HostClient.IsTLS",
			"RequestHeader.Peek", "RequestHeader.Set", "RequestHeader.Del"},
		hooks: []routeHook{
			{recv: "Server", name: "Serve", params: "ln net.Listener", text: "__matrix_rt_serving(); "},
			{recv: "HostClient", name: "do", params: "req *Request, resp *Response", text: fastClient},
			{recv: "Server", name: fn, params: params, before: "s.Handler(ctx)", text: begin},
			{recv: "Server", name: fn, params: params, after: "s.Handler(ctx)", text: servedReused},
		},
	}
}

// beginReused returns the statements that begin the dispatch of a request
// whose bytes its server reuses (fasthttp, hertz) in __matrix_rt_d, while
// the recording flag is set: header(key) is the expression of the
// request's header traceparent, tracestate or baggage (key, in lower
// case), and method and host those of its method and host (byte slices),
// copied only then; tls says whether it came over TLS. The tracestate is
// read only for a request with a traceparent or baggage. servedReused ends
// the dispatch with the response's status code (ctx.Response).
func beginReused(header func(key string) string, method, host, tls string) string {
	return fmt.Sprintf("__matrix_rt_d := __matrix_rt_none(); if *__matrix_rt_on != 0 { "+
		"__matrix_rt_tp, __matrix_rt_bg := %s, %s; "+
		"__matrix_rt_d = __matrix_rt_begin_request(%d, \"http\", __matrix_rt_method(%s), __matrix_rt_host(%s), %s); "+
		"if __matrix_rt_tp != nil || __matrix_rt_bg != nil { __matrix_rt_trace_bytes(__matrix_rt_d, __matrix_rt_tp, %s, __matrix_rt_bg) } }; ",
		header("traceparent"), header("baggage"), kindHTTP, method, host, tls, header("tracestate"))
}

// servedReused ends a dispatch begun by beginReused (see there).
const servedReused = "; if __matrix_rt_d != nil { __matrix_rt_served(__matrix_rt_d, ctx.Response.StatusCode()) }"

// hertzServe returns a rule of hertz's HTTP/1 server, whose Serve loop
// hands each request to the engine with the context ctxVar: the call is a
// dispatch of kind HTTP, begun in Serve's frame with the request's method,
// host (its header's: the URI must not be parsed before the engine runs),
// scheme and trace context, all read before it begins and copied only
// while recording, as fastServe's are, and ended with the status code once
// the engine returns. The engine recovers a handler's panic when the
// service has a recovery middleware or a panic handler; without one, the
// panic ends the program.
func hertzServe(ctxVar string) routeRule {
	call := "s.Core.ServeHTTP(" + ctxVar + ", ctx)"
	header := func(key string) string {
		return fmt.Sprintf("ctx.Request.Header.Peek(%q)", strings.ToUpper(key[:1])+key[1:])
	}
	begin := beginReused(header, "ctx.Request.Header.Method()", "ctx.Request.Header.Host()", "s.TLS != nil")
	return routeRule{
		needs: []string{"Server.Core", "Option.TLS", "HostClient.Addr", "HostClient.IsTLS"},
		hooks: []routeHook{
			{recv: "HostClient", name: "do", params: "req *protocol.Request, resp *protocol.Response", text: fastClient},
			{recv: "Server", name: "Serve", params: "c context.Context, conn network.Conn", before: call, text: begin},
			{recv: "Server", name: "Serve", params: "c context.Context, conn network.Conn", after: call, text: servedReused},
		},
	}
}

// fastClient makes each attempt of a fasthttp client's request (a
// Client's and a HostClient's Do reach HostClient.do once an attempt, the
// wait for a free connection included) a boundary named by
// its method, the scheme and the host client's address, while the
// recorder is on, as net/http's client requests are. The method's bytes
// are read in place: the boundary's text is copied before the call goes
// on. A request without a traceparent of its own carries the dispatch's
// trace context on, as net/http's do: the headers are set on the
// program's request for the attempt and removed when it returns.
var fastClient = fmt.Sprintf(`if *__matrix_rt_on != 0 { if __matrix_rt_ok, __matrix_rt_tp := __matrix_rt_bound_out(%d, __matrix_rt_bytes(req.Header.Method()), __matrix_rt_scheme(c.IsTLS), c.Addr, req.Header.Peek("Traceparent") == nil); __matrix_rt_ok { defer __matrix_rt_unbound(); if __matrix_rt_tp != "" { defer __matrix_rt_unset(&req.Header, __matrix_rt_pass_on(&req.Header, __matrix_rt_tp)) } } }; `, abi.BoundHTTP)

// grpcServer returns a rule of gRPC's: its client hooks, and the server's
// dispatch of each call in fn (unary and streaming calls alike), or in
// processUnaryRPC and processStreamingRPC if fn is "", whose parameters
// begin with lead.
func grpcServer(fn, lead string) routeRule {
	const info, trace = ", info *serviceInfo, ", ", trInfo *traceInfo"
	streaming := routeHook{recv: "Server", name: fn, params: lead + info + "sd *StreamDesc" + trace, text: rpcCall}
	if fn != "" {
		return routeRule{needs: grpcNeeds, hooks: slices.Concat(grpcClientHooks, []routeHook{streaming}), decls: grpcDecls}
	}
	streaming.name = "processStreamingRPC"
	unary := routeHook{recv: "Server", name: "processUnaryRPC", params: lead + info + "md *MethodDesc" + trace, text: rpcCall}
	return routeRule{needs: grpcNeeds, hooks: slices.Concat(grpcClientHooks, []routeHook{unary, streaming}), decls: grpcDecls}
}

// grpcDecls is gRPC's second declarations file: the trace context in a
// call's metadata.
func grpcDecls(pkgName string) (string, []byte) {
	return inject.RouteGRPCFileName, inject.RouteGRPC(pkgName)
}

// connectDecls is connect v2's second declarations file: the procedures
// its transport mounted.
func connectDecls(pkgName string) (string, []byte) {
	return inject.RouteConnectFileName, inject.RouteConnect(pkgName)
}

// grpcNeeds are the members gRPC's hooks use, in every release they fit.
var grpcNeeds = []string{"ClientConn.Target", "clientStream.callHdr", "clientStream.cc", "clientStream.desc", "unaryStreamDesc"}

// grpcClientHooks are gRPC's client hooks, the same in every release they
// fit.
var grpcClientHooks = []routeHook{
	{recv: "ClientConn", name: "Invoke", params: "ctx context.Context, method string, args, reply any, opts ...CallOption",
		text: rpcClient},
	{recv: "ClientConn", name: "NewStream", params: "ctx context.Context, desc *StreamDesc, method string, opts ...CallOption",
		text: rpcClient},
	{recv: "clientStream", name: "SendMsg", params: "m any",
		text: rpcStream + "; "},
	// After the binary log's call to Header, which is a boundary
	// of its own: the two follow each other, not one in the other.
	{recv: "clientStream", name: "RecvMsg", params: "m any",
		after: "var recvInfo *payloadInfo",
		text:  "; " + rpcStream},
	{recv: "clientStream", name: "Header", params: "",
		text: rpcStream + "; "},
}

// rpcCall begins the dispatch of an RPC, named "grpc", with its full
// method as the scene and the trace context of the call's metadata, if
// it has one.
var rpcCall = fmt.Sprintf(`if __matrix_rt_d := __matrix_rt_call(%d, "grpc", stream.Method()); __matrix_rt_d != nil { __matrix_rt_rpc_traceparent(__matrix_rt_d, stream.Context()); defer __matrix_rt_end(__matrix_rt_d, "") }; `, kindRPC)

// rpcClient makes a gRPC client call (unary, or the start of a stream) a
// boundary named by its full method and its connection's target, while
// the recorder is on; a call whose metadata has no traceparent gets the
// dispatch's trace context in its context's outgoing metadata.
var rpcClient = fmt.Sprintf(`if *__matrix_rt_on != 0 { if __matrix_rt_ctx, __matrix_rt_ok := __matrix_rt_rpc_bound(ctx, %d, method, cc.Target()); __matrix_rt_ok { ctx = __matrix_rt_ctx; defer __matrix_rt_unbound() } }; `, abi.BoundRPC)

// rpcStream makes each operation of a client stream that can wait for the
// server a boundary named like the stream's opening, by its full method and
// its connection's target: SendMsg (flow control), RecvMsg (the next
// message) and Header (the response's headers); CloseSend only queues a
// frame. The method is the stream's CallHdr.Method, a field of package
// internal/transport, which needs cannot name.
//
// A unary call runs on a client stream too: Invoke, a boundary already,
// calls its SendMsg and RecvMsg (and Header, with the binary log). That
// stream's StreamDesc is unaryStreamDesc, as gRPC itself tells unary calls
// from streams, and its operations open no boundary: a unary call is one
// frame, not one with two or three inside it. No other level would do: the
// stream a program opens and the stream of Invoke are the same
// *clientStream, made by the same function. (A SubConn's Invoke, for health
// checks and load reports, uses unaryStreamDesc on an addrConnStream, which
// is not hooked: programs do not reach it.)
var rpcStream = fmt.Sprintf(`if *__matrix_rt_on != 0 && cs.desc != unaryStreamDesc && __matrix_rt_bound(%d, cs.callHdr.Method, cs.cc.Target(), "", nil) { defer __matrix_rt_unbound() }`, abi.BoundRPC)

// natsPublisher is the shape of a nats.go release's Conn.publish: its
// parameters, the expression of the connected server's URL (a *url.URL,
// read under the connection's lock) and the members they and the server's
// information (Conn.info) use.
type natsPublisher struct {
	params, url string
	needs       []string
}

// The shapes of Conn.publish: since v1.49 (validateReply, Server,
// ServerInfo), in v1.48 (validateReply, srv, serverInfo), and from v1.11,
// where headers came, to v1.47.
var (
	natsPublishV149 = natsPublisher{"subj, reply string, validateReply bool, hdr, data []byte", "nc.current.URL",
		[]string{"Server.URL", "ServerInfo.Headers", "ServerInfo.MaxPayload"}}
	natsPublishV148 = natsPublisher{"subj, reply string, validateReply bool, hdr, data []byte", "nc.current.url",
		[]string{"srv.url", "serverInfo.Headers", "serverInfo.MaxPayload"}}
	natsPublishV111 = natsPublisher{"subj, reply string, hdr, data []byte", "nc.current.url",
		[]string{"srv.url", "serverInfo.Headers", "serverInfo.MaxPayload"}}
)

// natsPublish is the hook of a message the connection publishes, where
// publish holds the connection's lock, once it has refused headers to a
// server without them: a boundary of kind abi.BoundPublish (the system
// and the connected server's host, %[2]s its URL) that, when the server
// takes headers, the subject is not a system one and the message has no
// traceparent of its own (__matrix_rt_nats_pass), sends it with one, the
// dispatch's trace context with the boundary's span id
// (__matrix_rt_nats_header: new header bytes, within the server's
// maximum payload).
const natsPublish = `if *__matrix_rt_on != 0 { __matrix_rt_host := ""; if nc.current != nil && %[2]s != nil { __matrix_rt_host = %[2]s.Host }; ` +
	`if __matrix_rt_ok, __matrix_rt_tp := __matrix_rt_bound_out(%[1]d, "nats", __matrix_rt_host, "", __matrix_rt_nats_pass(nc.info.Headers, subj, hdr)); __matrix_rt_ok { ` +
	`defer __matrix_rt_unbound(); if __matrix_rt_tp != "" { hdr = __matrix_rt_nats_header(hdr, __matrix_rt_tp, len(data), nc.info.MaxPayload) } } }; `

// natsPublishAt is the statement of Conn.publish before which natsPublish
// goes.
const natsPublishAt = "if nc.isClosed() {\n\tnc.mu.Unlock()\n\treturn ErrConnectionClosed\n}"

// natsRule is the rule of nats.go's subscriptions, with the subject of a
// JetStream push subscription (js: read where the loop holds the
// subscription's lock, which guards it) or without, and the boundary of
// each message the connection publishes, in a release whose publish pub
// describes (nil: none).
func natsRule(js bool, pub *natsPublisher) routeRule {
	needs := []string{"Subscription.Subject", "Subscription.mcb", "Msg.Header"}
	subject := "s.Subject"
	var hooks []routeHook
	if js {
		needs = append(needs, "Subscription.jsi", "jsSub.psubj")
		subject = "__matrix_rt_s"
		hooks = append(hooks, routeHook{recv: "Conn", name: "waitForMsgs", params: "s *Subscription", after: "mcb := s.mcb",
			text: `; __matrix_rt_s := s.Subject; if s.jsi != nil && s.jsi.psubj != "" { __matrix_rt_s = s.jsi.psubj }`})
	}
	hooks = append(hooks,
		routeHook{recv: "Conn", name: "waitForMsgs", params: "s *Subscription", before: "mcb(m)",
			text: fmt.Sprintf(`__matrix_rt_d := __matrix_rt_none(); if *__matrix_rt_on != 0 { __matrix_rt_d = __matrix_rt_call(%d, "nats", %s); `+
				`if __matrix_rt_d != nil && m.Header != nil { __matrix_rt_trace_map(__matrix_rt_d, m.Header) } }; `, kindMessage, subject)},
		routeHook{recv: "Conn", name: "waitForMsgs", params: "s *Subscription", after: "mcb(m)",
			text: `; if __matrix_rt_d != nil { __matrix_rt_end(__matrix_rt_d, "") }`})
	if pub != nil {
		needs = append(needs, "Conn.current", "Conn.info")
		needs = append(needs, pub.needs...)
		hooks = append(hooks, routeHook{recv: "Conn", name: "publish", params: pub.params, before: natsPublishAt,
			text: fmt.Sprintf(natsPublish, abi.BoundPublish, pub.url)})
	}
	return routeRule{needs: needs, hooks: hooks}
}

// RouteHooksMissing says what a program loses when package pkg, which
// has route hooks, is compiled without them (PatchRoutes's note, or a
// compiler that rejects them).
func RouteHooksMissing(pkg string) string {
	switch pkg {
	case "github.com/valyala/fasthttp", "github.com/cloudwego/hertz/pkg/protocol/http1":
		return "its server's requests are not dispatches, and its client's are not boundaries"
	case "github.com/nats-io/nats.go":
		return "its subscriptions' messages are not dispatches, and the messages it publishes are not boundaries"
	case "github.com/nats-io/nats.go/jetstream":
		return "its pull consumers' messages are named after the inbox they arrive on"
	case "google.golang.org/grpc":
		return "its server's calls are not dispatches, and its client's are not boundaries"
	}
	return `its requests keep the scene "http"`
}

// HasRouteHooks reports whether PatchRoutes may change package pkg.
func HasRouteHooks(pkg string) bool { _, ok := routeRules()[pkg]; return ok }

// PatchRoutes adds the route hooks of a router, HTTP server or RPC server
// package (gin, echo, chi, gorilla/mux, httprouter, fiber, fasthttp, gRPC)
// to its files, writing
// the changed files and the file of declarations they use to dir, and
// returns the new file list. When the package does not have the shape the
// hooks rely on, it returns files unchanged and a note saying what is
// missing: the package then builds as it is, with the scene "http" for its
// requests.
func PatchRoutes(pkg string, files []string, dir string) (out []string, note string, err error) {
	var notes []string
	for _, rule := range routeRules()[pkg] {
		out, note, err := patchRoutesWith(pkg, rule, files, dir)
		if err != nil || note == "" {
			return out, "", err
		}
		notes = append(notes, note)
	}
	return files, strings.Join(notes, "; nor the shape of another release: "), nil
}

// patchRoutesWith is PatchRoutes with one rule of pkg's.
func patchRoutesWith(pkg string, rule routeRule, files []string, dir string) (out []string, note string, err error) {
	type parsed struct {
		sf   *srcFile
		fset *token.FileSet
	}
	fset := token.NewFileSet()
	var srcs []parsed
	members := map[string]bool{}
	for _, path := range files {
		if !strings.HasSuffix(path, ".go") {
			srcs = append(srcs, parsed{})
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, "", fmt.Errorf("route hooks for %s: %w", pkg, err)
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return files, fmt.Sprintf("%s does not parse (%v)", filepath.Base(path), err), nil
		}
		collectMembers(f, members)
		srcs = append(srcs, parsed{sf: &srcFile{editBuffer: editBuffer{path: path, src: src}, ast: f, lineNames: lineDirectiveNames(f, path)}, fset: fset})
	}
	for _, n := range rule.needs {
		if !members[n] {
			return files, fmt.Sprintf("no %s", n), nil
		}
	}
	pkgName := ""
	for h, hook := range rule.hooks {
		found := false
		for _, p := range srcs {
			if p.sf == nil {
				continue
			}
			pkgName = p.sf.ast.Name.Name
			for _, d := range p.sf.ast.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil || fd.Name.Name != hook.name || recvTypeName(fd) != hook.recv {
					continue
				}
				if got := paramList(fset, fd.Type.Params); !sameParams(got, "("+hook.params+")") {
					return files, fmt.Sprintf("%s has the parameters %s, not (%s)", hookName(stdHook{recv: hook.recv, name: hook.name}), got, hook.params), nil
				}
				if hook.after == "" && hook.before == "" {
					p.sf.insert(fset.Position(fd.Body.Lbrace).Offset+1, hook.text+resumeDirective(fset, p.sf, fd.Body.Lbrace))
					found = true
					break
				}
				// Before an if statement, or after a statement.
				what, at := hook.after, token.NoPos
				if hook.before != "" {
					what = hook.before
					if stmt := findStmt(fset, fd.Body, hook.before); stmt != nil {
						at = stmt.Pos()
					}
				} else if stmt := findStmt(fset, fd.Body, hook.after); stmt != nil {
					at = stmt.End()
				}
				if !at.IsValid() {
					return files, fmt.Sprintf("%s has no statement %q", hookName(stdHook{recv: hook.recv, name: hook.name}), what), nil
				}
				p.sf.insert(fset.Position(at).Offset, hook.text+resumeAt(fset, p.sf, at))
				found = true
				break
			}
			if found {
				break
			}
		}
		if !found {
			return files, fmt.Sprintf("no function %s (hook %d)", hookName(stdHook{recv: hook.recv, name: hook.name}), h), nil
		}
	}
	out = append([]string(nil), files...)
	for i, p := range srcs {
		if p.sf == nil || !p.sf.changed() {
			continue
		}
		dst := filepath.Join(dir, "route_"+filepath.Base(p.sf.path))
		if err := os.WriteFile(dst, p.sf.render(nil), 0o644); err != nil {
			return nil, "", fmt.Errorf("route hooks for %s: %w", pkg, err)
		}
		out[i] = dst
	}
	decls := filepath.Join(dir, inject.RouteFileName)
	if err := os.WriteFile(decls, inject.Route(pkgName), 0o644); err != nil {
		return nil, "", fmt.Errorf("route hooks for %s: %w", pkg, err)
	}
	out = append(out, decls)
	if rule.decls != nil {
		name, content := rule.decls(pkgName)
		extra := filepath.Join(dir, name)
		if err := os.WriteFile(extra, content, 0o644); err != nil {
			return nil, "", fmt.Errorf("route hooks for %s: %w", pkg, err)
		}
		out = append(out, extra)
	}
	return out, "", nil
}

// collectMembers adds the fields of f's struct types and its methods to
// members, each as "Type.name", and its package-level variables and
// functions, each as its name.
func collectMembers(f *ast.File, members map[string]bool) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if r := recvTypeName(d); r != "" {
				members[r+"."+d.Name.Name] = true
			} else if d.Recv == nil {
				members[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok && d.Tok == token.VAR {
					for _, n := range vs.Names {
						members[n.Name] = true
					}
					continue
				}
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						members[ts.Name.Name+"."+n.Name] = true
					}
				}
			}
		}
	}
}

// routeNamed is the route file's function that names the request of a
// handler wrapped where a router registers it (httprouter, go-zero), or the
// message of a handler a JetStream consumer is given.
const routeNamed = "__matrix_rt_named"

// namedWrapper returns a function literal that wraps a handler h of type
// typ in one that names the goroutine's dispatch scene (routeNamed) and
// then calls it: func(h typ, scene string) typ. The wrapper takes params
// and runs call; conv, if not empty, converts it to typ. isRouteWrapper
// tells both literals from the package's own.
func namedWrapper(typ, conv, params, call string) string {
	inner := "func(" + params + ") { " + routeNamed + "(scene); " + call + " }"
	if conv != "" {
		inner = conv + "(" + inner + ")"
	}
	return "func(h " + typ + ", scene string) " + typ + " { return " + inner + " }"
}

// isRouteWrapper reports whether body, a function literal's, is one a
// route hook added: it calls routeNamed, itself or in the literal it
// returns. Hook statements go into a router's own functions, never into
// its literals, and a package's own code cannot name the route file's
// functions, so no literal of the package's is taken for one.
func isRouteWrapper(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == routeNamed {
				found = true
			}
		}
		return !found
	})
	return found
}

// findStmt returns the simple or if statement of body (at any depth) that
// prints as text, or nil.
func findStmt(fset *token.FileSet, body *ast.BlockStmt, text string) ast.Stmt {
	isIf := strings.HasPrefix(text, "if ")
	var found ast.Stmt
	ast.Inspect(body, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch s := n.(type) {
		case *ast.AssignStmt, *ast.ExprStmt, *ast.DeclStmt:
			if !isIf && printed(fset, s) == text {
				found = s.(ast.Stmt)
			}
			return false
		case *ast.IfStmt:
			if isIf && printed(fset, s) == text {
				found = s
				return false
			}
		case *ast.FuncLit:
			return false // another function's body
		}
		return true
	})
	return found
}

// sameParams reports whether parameter lists got and want, as paramList
// prints them, are the same: any and interface{} are one type, and
// releases of a package written before Go 1.18 spell it interface{}.
func sameParams(got, want string) bool {
	return got == want || strings.ReplaceAll(got, "interface{}", "any") == want
}

// paramList prints a parameter list: "(a, b string, c T)".
func paramList(fset *token.FileSet, fl *ast.FieldList) string {
	var parts []string
	for _, f := range fl.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		typ := printed(fset, f.Type)
		if len(names) == 0 {
			parts = append(parts, typ)
		} else {
			parts = append(parts, strings.Join(names, ", ")+" "+typ)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// printed returns node as go/printer prints it.
func printed(fset *token.FileSet, node any) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, node); err != nil {
		return ""
	}
	return b.String()
}

// resumeAt returns the block line directive that gives the text at pos its
// original position back.
func resumeAt(fset *token.FileSet, f *srcFile, pos token.Pos) string {
	ps := fset.Position(pos)
	if raw, ok := f.lineNames[ps.Filename]; ok {
		ps.Filename = raw
	}
	if ps.Column == 0 {
		return fmt.Sprintf("/*line %s:%d*/", ps.Filename, ps.Line)
	}
	return fmt.Sprintf("/*line %s:%d:%d*/", ps.Filename, ps.Line, ps.Column)
}
