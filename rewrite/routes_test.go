package rewrite

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/inject"
)

// ginShape is the part of gin's engine that its route hooks rely on.
const ginShape = `package gin

type Request struct{ Method string }

type Context struct {
	Request  *Request
	fullPath string
}

type Engine struct{}

type nodeValue struct{ fullPath string }

func (engine *Engine) handleHTTPRequest(c *Context) {
	value := nodeValue{fullPath: "/users/:id"}
	if value.fullPath != "" {
		c.fullPath = value.fullPath // the route matched
		println("next")
	}
}
`

// TestPatchRoutes: a package with the shape a rule declares gets its
// statements, without moving an original token, and compiles with the
// declarations file; one with another shape is left untouched, with a note
// naming what is missing.
func TestPatchRoutes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "gin.go")
	if err := os.WriteFile(src, []byte(ginShape), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, note, err := PatchRoutes("github.com/gin-gonic/gin", []string{src}, dir)
	if err != nil || note != "" {
		t.Fatalf("PatchRoutes: note %q, err %v", note, err)
	}
	want := []string{filepath.Join(dir, "route_gin.go"), filepath.Join(dir, inject.RouteFileName)}
	if !slices.Equal(files, want) {
		t.Fatalf("files = %v, want %v", files, want)
	}
	out, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`func (engine *Engine) handleHTTPRequest(c *Context) {__matrix_rt_route(c.Request.Method, ""); `,
		`c.fullPath = value.fullPath; __matrix_rt_route(c.Request.Method, c.fullPath)/*line ` + src + `:17:30*/ // the route matched`,
	} {
		if !strings.Contains(string(out), s) {
			t.Errorf("patched file has no %q:\n%s", s, out)
		}
	}
	fset, astFiles, err := typeCheck(t, "gin", files)
	if err != nil {
		t.Errorf("the patched package does not type-check: %v", err)
	}
	// The statement after the inserted one keeps its position.
	var next token.Position
	ast.Inspect(astFiles[0], func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "println" {
				next = fset.Position(c.Pos())
			}
		}
		return true
	})
	if next.Filename != src || next.Line != 18 || next.Column != 3 {
		t.Errorf("println at %v, want %s:18:3", next, src)
	}

	for _, tc := range []struct{ name, from, to, note string }{
		{"statement", "c.fullPath = value.fullPath", "c.fullPath = value.fullPath + \"\"", `has no statement "c.fullPath = value.fullPath"`},
		{"parameters", "handleHTTPRequest(c *Context)", "handleHTTPRequest(ctx *Context)", "has the parameters (ctx *Context), not (c *Context)"},
		{"function", "handleHTTPRequest(c *Context)", "serve(c *Context)", "no function (Engine).handleHTTPRequest"},
		{"field", "fullPath string\n}", "path string\n}", "no Context.fullPath"},
	} {
		other := filepath.Join(t.TempDir(), "gin.go")
		if err := os.WriteFile(other, []byte(strings.Replace(ginShape, tc.from, tc.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		files, note, err := PatchRoutes("github.com/gin-gonic/gin", []string{other}, dir)
		if err != nil || !strings.Contains(note, tc.note) || !slices.Equal(files, []string{other}) {
			t.Errorf("%s: files %v, note %q, err %v; want the file unchanged and a note with %q", tc.name, files, note, err, tc.note)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: files written for a package left untouched: %v", tc.name, ents)
		}
	}
	if files, note, err := PatchRoutes("example.com/other", []string{src}, dir); err != nil || note != "" || !slices.Equal(files, []string{src}) {
		t.Errorf("a package without rule: files %v, note %q, err %v", files, note, err)
	}
}

// grpcShape is the part of gRPC's client and server that its hooks rely
// on; grpcTransport stands in for its internal/transport package.
const grpcShape = `package grpc

import (
	"context"

	"google.golang.org/grpc/internal/transport"
)

type CallOption interface{}

type StreamDesc struct{ ServerStreams, ClientStreams bool }

type ClientConn struct{ target string }

func (cc *ClientConn) Target() string { return cc.target }

var unaryStreamDesc = &StreamDesc{}

type clientStream struct {
	callHdr *transport.CallHdr
	cc      *ClientConn
	desc    *StreamDesc
}

type payloadInfo struct{}

func (cs *clientStream) SendMsg(m any) (err error) { return nil }

func (cs *clientStream) RecvMsg(m any) error {
	if m == nil {
		cs.Header()
	}
	var recvInfo *payloadInfo
	_ = recvInfo
	return nil
}

func (cs *clientStream) CloseSend() error { return nil }

func (cs *clientStream) Header() (map[string][]string, error) { return nil, nil }

func (cc *ClientConn) Invoke(ctx context.Context, method string, args, reply any, opts ...CallOption) error {
	cs := &clientStream{callHdr: &transport.CallHdr{Method: method}, cc: cc, desc: unaryStreamDesc}
	cs.SendMsg(args)
	return cs.RecvMsg(reply)
}

func (cc *ClientConn) NewStream(ctx context.Context, desc *StreamDesc, method string, opts ...CallOption) (any, error) {
	return &clientStream{callHdr: &transport.CallHdr{Method: method}, cc: cc, desc: desc}, nil
}

type Server struct{}

type serviceInfo struct{}

type MethodDesc struct{}

type traceInfo struct{}

func (s *Server) processUnaryRPC(ctx context.Context, stream *transport.ServerStream, info *serviceInfo, md *MethodDesc, trInfo *traceInfo) error {
	return nil
}

func (s *Server) processStreamingRPC(ctx context.Context, stream *transport.ServerStream, info *serviceInfo, sd *StreamDesc, trInfo *traceInfo) error {
	return nil
}
`

const grpcTransport = `package transport

import "context"

type CallHdr struct{ Method string }

type ServerStream struct{ method string }

func (s *ServerStream) Method() string { return s.method }

func (s *ServerStream) Context() context.Context { return context.Background() }

type ServerTransport interface{ Close(error) }

type Stream struct{ method string }

func (s *Stream) Method() string { return s.method }

func (s *Stream) Context() context.Context { return context.Background() }
`

// grpcMetadata is the part of gRPC's metadata package its hooks use.
const grpcMetadata = `package metadata

import "context"

type MD map[string][]string

func FromOutgoingContext(ctx context.Context) (MD, bool) { return nil, false }

func FromIncomingContext(ctx context.Context) (MD, bool) { return nil, false }

func AppendToOutgoingContext(ctx context.Context, kv ...string) context.Context { return ctx }
`

// grpcImporter imports grpcTransport for gRPC's internal/transport,
// grpcMetadata for its metadata package, and the standard library.
type grpcImporter struct {
	transport, metadata *types.Package
	std                 types.Importer
}

func (im grpcImporter) Import(path string) (*types.Package, error) {
	switch path {
	case "google.golang.org/grpc/internal/transport":
		return im.transport, nil
	case "google.golang.org/grpc/metadata":
		return im.metadata, nil
	}
	return im.std.Import(path)
}

// checkGRPC type-checks a patched gRPC package made of files, with
// grpcTransport for its internal/transport.
func checkGRPC(t *testing.T, files []string) error {
	t.Helper()
	fset := token.NewFileSet()
	tf, err := parser.ParseFile(fset, "transport.go", grpcTransport, 0)
	if err != nil {
		t.Fatal(err)
	}
	std := importer.Default() // one context package for all three
	tp, err := (&types.Config{Importer: std}).Check("google.golang.org/grpc/internal/transport", fset, []*ast.File{tf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := parser.ParseFile(fset, "metadata.go", grpcMetadata, 0)
	if err != nil {
		t.Fatal(err)
	}
	mp, err := (&types.Config{Importer: std}).Check("google.golang.org/grpc/metadata", fset, []*ast.File{mf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: grpcImporter{transport: tp, metadata: mp, std: std}}
	_, err = conf.Check("grpc", fset, parseFiles(t, fset, files), nil)
	return err
}

// TestPatchRoutesGRPC: gRPC's client calls get their boundaries, a client
// stream's SendMsg, RecvMsg (after the binary log's call to Header) and
// Header theirs, which a unary call's stream does not open; the patched
// package compiles. A version without a member the statements use is left
// untouched.
func TestPatchRoutesGRPC(t *testing.T) {
	src := filepath.Join(t.TempDir(), "stream.go")
	if err := os.WriteFile(src, []byte(grpcShape), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, note, err := PatchRoutes("google.golang.org/grpc", []string{src}, dir)
	if err != nil || note != "" {
		t.Fatalf("PatchRoutes: note %q, err %v", note, err)
	}
	out, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	const stream = `if *__matrix_rt_on != 0 && cs.desc != unaryStreamDesc && __matrix_rt_bound(3, cs.callHdr.Method, cs.cc.Target(), "", nil) { defer __matrix_rt_unbound() }`
	for _, s := range []string{
		`func (cs *clientStream) SendMsg(m any) (err error) {` + stream + `; `,
		"\tvar recvInfo *payloadInfo; " + stream + `/*line ` + src + ":33:27*/\n",
		`func (cs *clientStream) Header() (map[string][]string, error) {` + stream + `; `,
		`func (cc *ClientConn) Invoke(ctx context.Context, method string, args, reply any, opts ...CallOption) error {if *__matrix_rt_on != 0 { if __matrix_rt_ctx, __matrix_rt_ok := __matrix_rt_rpc_bound(ctx, 3, method, cc.Target()); __matrix_rt_ok { ctx = __matrix_rt_ctx; defer __matrix_rt_unbound() } }; `,
		`opts ...CallOption) (any, error) {if *__matrix_rt_on != 0 { if __matrix_rt_ctx, __matrix_rt_ok := __matrix_rt_rpc_bound(ctx, 3, method, cc.Target()); __matrix_rt_ok { ctx = __matrix_rt_ctx; defer __matrix_rt_unbound() } }; `,
		`func (cs *clientStream) CloseSend() error { return nil }`,
	} {
		if !strings.Contains(string(out), s) {
			t.Errorf("patched file has no %q:\n%s", s, out)
		}
	}
	if n, m := strings.Count(string(out), "__matrix_rt_bound("), strings.Count(string(out), "__matrix_rt_rpc_bound("); n != 3 || m != 2 {
		t.Errorf("%d boundaries in the patched file and %d that pass the trace context on, want 3 (SendMsg, RecvMsg, Header) and 2 (Invoke, NewStream)", n, m)
	}

	if err := checkGRPC(t, files); err != nil {
		t.Errorf("the patched package does not type-check: %v", err)
	}

	// Newer releases handle every call in processRPC: that shape fits,
	// and its server hook is the one dispatch of a call.
	const (
		unary     = "func (s *Server) processUnaryRPC(ctx context.Context, stream *transport.ServerStream, info *serviceInfo, md *MethodDesc, trInfo *traceInfo) error {\n\treturn nil\n}\n\n"
		streaming = "func (s *Server) processStreamingRPC("
		unified   = "func (s *Server) processRPC("
	)
	if !strings.Contains(grpcShape, unary) || !strings.Contains(grpcShape, streaming) {
		t.Fatal("grpcShape lacks the server functions")
	}
	newer := filepath.Join(t.TempDir(), "stream.go")
	if err := os.WriteFile(newer, []byte(strings.Replace(strings.Replace(grpcShape, unary, "", 1), streaming, unified, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	files, note, err = PatchRoutes("google.golang.org/grpc", []string{newer}, t.TempDir())
	if err != nil || note != "" {
		t.Fatalf("processRPC shape: note %q, err %v", note, err)
	}
	if out, err = os.ReadFile(files[0]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), unified+"ctx context.Context, stream *transport.ServerStream, info *serviceInfo, sd *StreamDesc, trInfo *traceInfo) error {"+rpcCall) ||
		strings.Count(string(out), "__matrix_rt_call(") != 1 || strings.Count(string(out), "__matrix_rt_bound(") != 3 {
		t.Errorf("processRPC shape: patched file\n%s", out)
	}
	// Older releases handle a call with the server transport and a
	// *transport.Stream, from v1.60 after the context, and those before
	// Go 1.18 spell any interface{}: each shape fits, with a dispatch in
	// both server functions, and the patched package compiles.
	for _, tc := range []struct{ name, lead string }{
		{"v1.60", "ctx context.Context, t transport.ServerTransport, stream *transport.Stream"},
		{"v1.50", "t transport.ServerTransport, stream *transport.Stream"},
	} {
		old := strings.ReplaceAll(grpcShape, "ctx context.Context, stream *transport.ServerStream", tc.lead)
		if tc.name == "v1.50" {
			old = strings.ReplaceAll(strings.ReplaceAll(old, "m any)", "m interface{})"), "args, reply any,", "args, reply interface{},")
		}
		src := filepath.Join(t.TempDir(), "stream.go")
		if err := os.WriteFile(src, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		files, note, err := PatchRoutes("google.golang.org/grpc", []string{src}, t.TempDir())
		if err != nil || note != "" {
			t.Fatalf("%s shape: note %q, err %v", tc.name, note, err)
		}
		out, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range []string{"processUnaryRPC", "processStreamingRPC"} {
			if !regexp.MustCompile(`func \(s \*Server\) ` + fn + `\(` + regexp.QuoteMeta(tc.lead) + `, [^{]*\{` + regexp.QuoteMeta(rpcCall)).Match(out) {
				t.Errorf("%s shape: %s has no dispatch:\n%s", tc.name, fn, out)
			}
		}
		if n := strings.Count(string(out), "__matrix_rt_call("); n != 2 {
			t.Errorf("%s shape: %d dispatches, want 2", tc.name, n)
		}
		if n := strings.Count(string(out), "__matrix_rt_bound(") + strings.Count(string(out), "__matrix_rt_rpc_bound("); n != 5 {
			t.Errorf("%s shape: %d boundaries, want 5", tc.name, n)
		}
		if err := checkGRPC(t, files); err != nil {
			t.Errorf("%s shape: the patched package does not type-check: %v", tc.name, err)
		}
	}

	// A package with neither shape is left alone, and the note says what
	// each shape missed.
	neither := filepath.Join(t.TempDir(), "stream.go")
	if err := os.WriteFile(neither, []byte(strings.Replace(strings.Replace(grpcShape, unary, "", 1), streaming, "func (s *Server) other(", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	files, note, err = PatchRoutes("google.golang.org/grpc", []string{neither}, t.TempDir())
	if err != nil || !slices.Equal(files, []string{neither}) || !strings.Contains(note, "no function (Server).processRPC") || !strings.Contains(note, "no function (Server).processUnaryRPC") {
		t.Errorf("neither shape: files %v, note %q, err %v", files, note, err)
	}

	for _, tc := range []struct{ name, from, to, note string }{
		{"desc", "desc    *StreamDesc\n}", "}", "no clientStream.desc"},
		{"unary", "var unaryStreamDesc = &StreamDesc{}", "", "no unaryStreamDesc"},
		{"recvInfo", "var recvInfo *payloadInfo\n\t_ = recvInfo", "", `has no statement "var recvInfo *payloadInfo"`},
	} {
		other := filepath.Join(t.TempDir(), "stream.go")
		if err := os.WriteFile(other, []byte(strings.Replace(grpcShape, tc.from, tc.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		files, note, err := PatchRoutes("google.golang.org/grpc", []string{other}, t.TempDir())
		if err != nil || !strings.Contains(note, tc.note) || !slices.Equal(files, []string{other}) {
			t.Errorf("%s: files %v, note %q, err %v; want the file unchanged and a note with %q", tc.name, files, note, err, tc.note)
		}
	}
}

// ginMatchShape and echoMatchShape are the parts of gin's engine and
// echo's router that their newer route hooks rely on: a request is named
// unmatched only where the router finds no route.
const ginMatchShape = `package gin

type Request struct{ Method string }

type HandlersChain []func(*Context)

type Context struct {
	Request      *Request
	fullPath     string
	handlers     HandlersChain
	params       *[]string
	skippedNodes *[]int
}

type Engine struct{ allNoRoute, allNoMethod HandlersChain }

type nodeValue struct {
	handlers HandlersChain
	fullPath string
}

type node struct{}

func (n *node) getValue(path string, params *[]string, skipped *[]int, unescape bool) nodeValue {
	return nodeValue{}
}

func (engine *Engine) handleHTTPRequest(c *Context) {
	rPath, unescape, root := "/", false, &node{}
	value := root.getValue(rPath, c.params, c.skippedNodes, unescape)
	if value.handlers != nil {
		c.fullPath = value.fullPath
		return
	}
	if rPath == "" {
		c.handlers = engine.allNoMethod
		return
	}
	c.handlers = engine.allNoRoute
}
`

const echoMatchShape = `package echo

type Context interface{}

type HandlerFunc func(Context) error

type routeMethod struct {
	ppath   string
	handler HandlerFunc
}

type node struct{ notFoundHandler *routeMethod }

type context struct{ handler HandlerFunc }

type Router struct{ tree *node }

var NotFoundHandler HandlerFunc

func (r *Router) Find(method, path string, c Context) {
	ctx := c.(*context)
	currentNode := r.tree
	var previousBestMatchNode, matchedRouteMethod = currentNode, currentNode.notFoundHandler
	if currentNode == nil && previousBestMatchNode == nil {
		return // nothing matched at all
	}
	var rPath string
	if matchedRouteMethod != nil {
		rPath = matchedRouteMethod.ppath
		ctx.handler = matchedRouteMethod.handler
	} else {
		ctx.handler = NotFoundHandler
	}
	_ = rPath
}
`

// TestPatchRoutesNamesUnmatchedOnce: in the releases that fit the newer
// rules, gin and echo name a request unmatched where they find no route,
// and a matched request only after its route; the patched package
// compiles, and a statement the hooks precede keeps its position.
func TestPatchRoutesNamesUnmatchedOnce(t *testing.T) {
	for _, tc := range []patchCase{
		{"gin", "github.com/gin-gonic/gin", ginMatchShape, []string{
			`value := root.getValue(rPath, c.params, c.skippedNodes, unescape); if value.handlers == nil { __matrix_rt_route(c.Request.Method, "") }/*line `,
			`c.fullPath = value.fullPath; __matrix_rt_route(c.Request.Method, c.fullPath)/*line `,
			`c.handlers = engine.allNoMethod; __matrix_rt_route(c.Request.Method, "")/*line `,
			`c.handlers = engine.allNoRoute; __matrix_rt_route(c.Request.Method, "")/*line `,
		}, `handleHTTPRequest(c *Context) {__matrix_rt_route`},
		{"echo", "github.com/labstack/echo/v4", echoMatchShape, []string{
			`if currentNode == nil && previousBestMatchNode == nil { __matrix_rt_route(method, "") }; /*line %s:24:2*/if currentNode == nil && previousBestMatchNode == nil {`,
			`ctx.handler = matchedRouteMethod.handler; if matchedRouteMethod != currentNode.notFoundHandler { __matrix_rt_route(method, rPath) } else { __matrix_rt_route(method, "") }/*line `,
			`ctx.handler = NotFoundHandler; __matrix_rt_route(method, "")/*line `,
		}, `Find(method, path string, c Context) {__matrix_rt_route`},
	} {
		tc.check(t)
	}
}

// A patchCase is a package of import path pkg made of the one file shape,
// whose patched file must have each of want (in which %s stands for the
// original file's path) and not not; label names the case in failures.
type patchCase struct {
	label, pkg, shape string
	want              []string
	not               string
}

// check patches the case's package and checks the patched file, and that
// the patched package type-checks.
func (tc patchCase) check(t *testing.T) {
	t.Helper()
	label, pkg, shape, want, not := tc.label, tc.pkg, tc.shape, tc.want, tc.not
	src := filepath.Join(t.TempDir(), "router.go")
	if err := os.WriteFile(src, []byte(shape), 0o644); err != nil {
		t.Fatal(err)
	}
	files, note, err := PatchRoutes(pkg, []string{src}, t.TempDir())
	if err != nil || note != "" {
		t.Fatalf("%s: PatchRoutes: note %q, err %v", label, note, err)
	}
	out, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range want {
		if s = strings.ReplaceAll(s, "%s", src); !strings.Contains(string(out), s) {
			t.Errorf("%s: patched file has no %q:\n%s", label, s, out)
		}
	}
	if strings.Contains(string(out), not) {
		t.Errorf("%s: patched file has %q:\n%s", label, not, out)
	}
	if _, _, err := typeCheck(t, "router", files); err != nil {
		t.Errorf("%s: the patched package does not type-check: %v", label, err)
	}
}

// typeCheck parses the patched files of one package, failing the test if
// one does not parse, and type-checks them against the installed standard
// library.
func typeCheck(t *testing.T, pkg string, files []string) (*token.FileSet, []*ast.File, error) {
	t.Helper()
	fset := token.NewFileSet()
	astFiles := parseFiles(t, fset, files)
	_, err := (&types.Config{Importer: importer.Default()}).Check(pkg, fset, astFiles, nil)
	return fset, astFiles, err
}

// parseFiles parses files into fset with their comments, failing the test
// if one does not parse.
func parseFiles(t *testing.T, fset *token.FileSet, files []string) []*ast.File {
	t.Helper()
	var astFiles []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		astFiles = append(astFiles, af)
	}
	return astFiles
}

// chiShape is the part of chi v5's router that its route hooks rely on, in
// the releases that set the matched pattern on the request (r.Pattern).
const chiShape = `package chi

import "net/http"

type methodTyp uint

type endpoint struct{ pattern string }

type node struct{ endpoints map[methodTyp]*endpoint }

type Context struct {
	RouteMethod      string
	RoutePatterns    []string
	routePattern     string
	methodNotAllowed bool
	methodsAllowed   []methodTyp
}

func (x *Context) RoutePattern() string { return x.routePattern }

func (n *node) findRoute(rctx *Context, method methodTyp, path string) *node { return n }

func (n *node) FindRoute(rctx *Context, method methodTyp, path string) (*node, http.Handler) {
	rn := n.findRoute(rctx, method, path)
	if rn == nil {
		return nil, nil
	}
	rctx.RoutePatterns = append(rctx.RoutePatterns, rctx.routePattern)
	return rn, nil
}

type Mux struct{ tree *node }

func (mx *Mux) MethodNotAllowedHandler(methods ...methodTyp) http.Handler { return nil }

func (mx *Mux) NotFoundHandler() http.Handler { return nil }

func (mx *Mux) routeHTTP(w http.ResponseWriter, r *http.Request) {
	rctx := &Context{RouteMethod: r.Method}
	if _, h := mx.tree.FindRoute(rctx, 0, r.URL.Path); h != nil {
		r.Pattern = rctx.RoutePattern()
		h.ServeHTTP(w, r)
		return
	}
	if rctx.methodNotAllowed {
		mx.MethodNotAllowedHandler(rctx.methodsAllowed...).ServeHTTP(w, r)
	} else {
		mx.NotFoundHandler().ServeHTTP(w, r)
	}
}
`

// TestPatchRoutesChi: chi is named where the router serves the request,
// so that a lookup (Match, Find: FindRoute) names nothing: from the
// pattern a release since v5.3 sets on the request, or from RoutePattern
// before the handler runs in older ones (whose not-found branch changed in
// v5.0.11); a release of yet another shape is named in FindRoute. Every
// patched package compiles.
func TestPatchRoutesChi(t *testing.T) {
	const chi = "github.com/go-chi/chi/v5"
	for _, tc := range []patchCase{
		{"sets r.Pattern", chi, chiShape, []string{
			`r.Pattern = rctx.RoutePattern(); __matrix_rt_route(rctx.RouteMethod, r.Pattern)/*line `,
			`__matrix_rt_route(rctx.RouteMethod, ""); /*line %s:45:2*/if rctx.methodNotAllowed {`,
		}, "rn := n.findRoute(rctx, method, path);"},
		{"before v5.3", chi, strings.Replace(chiShape, "r.Pattern = rctx.RoutePattern()", "_ = rctx.RoutePattern()", 1), []string{
			`if __matrix_rt_active() { __matrix_rt_route(rctx.RouteMethod, rctx.RoutePattern()) }; /*line %s:42:3*/h.ServeHTTP(w, r)`,
			`__matrix_rt_route(rctx.RouteMethod, ""); /*line %s:45:2*/if rctx.methodNotAllowed {`,
		}, "rn := n.findRoute(rctx, method, path);"},
		{"before v5.0.11", chi, strings.NewReplacer("r.Pattern = rctx.RoutePattern()", "_ = rctx.RoutePattern()",
			"MethodNotAllowedHandler(rctx.methodsAllowed...).ServeHTTP", "MethodNotAllowedHandler().ServeHTTP").Replace(chiShape), []string{
			`if __matrix_rt_active() { __matrix_rt_route(rctx.RouteMethod, rctx.RoutePattern()) }; /*line %s:42:3*/h.ServeHTTP(w, r)`,
			`__matrix_rt_route(rctx.RouteMethod, ""); /*line %s:45:2*/if rctx.methodNotAllowed {`,
		}, "rn := n.findRoute(rctx, method, path);"},
		{"another shape", chi, strings.NewReplacer("r.Pattern = rctx.RoutePattern()", "_ = rctx.RoutePattern()",
			"h.ServeHTTP(w, r)\n", "h.ServeHTTP(w, r.WithContext(r.Context()))\n").Replace(chiShape), []string{
			`rn := n.findRoute(rctx, method, path); if rn == nil || __matrix_rt_active() && rn.endpoints[method].pattern == "" { __matrix_rt_route(rctx.RouteMethod, "") }/*line `,
			`rctx.RoutePatterns = append(rctx.RoutePatterns, rctx.routePattern); if __matrix_rt_active() { __matrix_rt_route(rctx.RouteMethod, rctx.RoutePattern()) }/*line `,
		}, `__matrix_rt_route(rctx.RouteMethod, ""); `},
	} {
		tc.check(t)
	}
}

// fasthttpShape is the part of fasthttp's server that its hooks rely on,
// with the connection loop of releases since v1.7x (serveConnCounted).
const fasthttpShape = `package fasthttp

import "net"

type RequestHeader struct{ traceparent []byte }

func (h *RequestHeader) peek(key []byte) []byte { return h.traceparent }

func (h *RequestHeader) Peek(key string) []byte { return h.traceparent }

func (h *RequestHeader) Set(key, value string) {}

func (h *RequestHeader) Del(key string) {}

func (h *RequestHeader) Method() []byte { return []byte("GET") }

type Request struct{ Header RequestHeader }

type Response struct{ statusCode int }

func (resp *Response) StatusCode() int { return resp.statusCode }

type RequestCtx struct {
	Request  Request
	Response Response
}

func (ctx *RequestCtx) Method() []byte { return []byte("GET") }
func (ctx *RequestCtx) Host() []byte   { return []byte("example.com") }
func (ctx *RequestCtx) IsTLS() bool    { return false }

type RequestHandler func(ctx *RequestCtx)

type HostClient struct {
	Addr  string
	IsTLS bool
}

func (c *HostClient) do(req *Request, resp *Response) (bool, error) {
	return false, nil
}

type Server struct{ Handler RequestHandler }

func (s *Server) Serve(ln net.Listener) error { return nil }

func (s *Server) serveConnCounted(c net.Conn, countConcurrency bool) error {
	for i := 0; i < 2; i++ {
		ctx := &RequestCtx{}
		if c != nil {
			s.Handler(ctx)
		}
		println("next")
	}
	return nil
}
`

// TestPatchRoutesFastHTTP: each call of a fasthttp server's handler is a
// dispatch begun in the frame that calls it and ended, with the status
// code, after it, in both shapes of the connection loop, and each attempt
// of a client's request is a boundary; the patched package compiles with
// the declarations file. A loop without the call is left untouched with a
// note.
func TestPatchRoutesFastHTTP(t *testing.T) {
	for _, tc := range []struct{ name, shape string }{
		{"serveConnCounted", fasthttpShape},
		{"serveConn", strings.Replace(fasthttpShape, "serveConnCounted(c net.Conn, countConcurrency bool)", "serveConn(c net.Conn)", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "server.go")
			if err := os.WriteFile(src, []byte(tc.shape), 0o644); err != nil {
				t.Fatal(err)
			}
			files, note, err := PatchRoutes("github.com/valyala/fasthttp", []string{src}, t.TempDir())
			if err != nil || note != "" {
				t.Fatalf("PatchRoutes: note %q, err %v", note, err)
			}
			out, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			line := strings.Count(tc.shape[:strings.Index(tc.shape, "s.Handler(ctx)")], "\n") + 1
			begin := regexp.MustCompile(`(?m)^\t\t\t__matrix_rt_d := __matrix_rt_none\(\); if \*__matrix_rt_on != 0 \{ __matrix_rt_tp, __matrix_rt_bg := ctx\.Request\.Header\.peek\(__matrix_rt_traceparent_key\), ctx\.Request\.Header\.peek\(__matrix_rt_baggage_key\); ` +
				`__matrix_rt_d = __matrix_rt_begin_request\(1, "http", __matrix_rt_method\(ctx\.Method\(\)\), __matrix_rt_host\(ctx\.Host\(\)\), ctx\.IsTLS\(\)\); ` +
				`if __matrix_rt_tp != nil \|\| __matrix_rt_bg != nil \{ __matrix_rt_trace_bytes\(__matrix_rt_d, __matrix_rt_tp, ctx\.Request\.Header\.peek\(__matrix_rt_tracestate_key\), __matrix_rt_bg\) \} \}; /\*line [^*]+:` + strconv.Itoa(line) + `:4\*/s\.Handler\(ctx\); ` +
				`if __matrix_rt_d != nil \{ __matrix_rt_served\(__matrix_rt_d, ctx\.Response\.StatusCode\(\)\) \}/\*line [^*]+:` + strconv.Itoa(line) + `:18\*/$`)
			if !begin.Match(out) {
				t.Errorf("the handler's call is not a dispatch:\n%s", out)
			}
			if !strings.Contains(string(out), "func (s *Server) Serve(ln net.Listener) error {__matrix_rt_serving(); ") {
				t.Errorf("Serve does not make the service ready:\n%s", out)
			}
			const bound = `if *__matrix_rt_on != 0 { if __matrix_rt_ok, __matrix_rt_tp := __matrix_rt_bound_out(2, __matrix_rt_bytes(req.Header.Method()), __matrix_rt_scheme(c.IsTLS), c.Addr, req.Header.Peek("Traceparent") == nil); __matrix_rt_ok { defer __matrix_rt_unbound(); if __matrix_rt_tp != "" { defer __matrix_rt_unset(&req.Header, __matrix_rt_pass_on(&req.Header, __matrix_rt_tp)) } } }; `
			if !strings.Contains(string(out), "func (c *HostClient) do(req *Request, resp *Response) (bool, error) {"+bound) {
				t.Errorf("a client's attempt is not a boundary:\n%s", out)
			}
			if _, _, err := typeCheck(t, "fasthttp", files); err != nil {
				t.Errorf("the patched package does not type-check: %v", err)
			}
		})
	}
	src := filepath.Join(t.TempDir(), "server.go")
	if err := os.WriteFile(src, []byte(strings.Replace(fasthttpShape, "s.Handler(ctx)", "h := s.Handler; h(ctx)", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	files, note, err := PatchRoutes("github.com/valyala/fasthttp", []string{src}, t.TempDir())
	if err != nil || !strings.Contains(note, `no statement "s.Handler(ctx)"`) || !slices.Equal(files, []string{src}) {
		t.Errorf("another shape: files %v, note %q, err %v; want it untouched with a note", files, note, err)
	}
}

// fiberShape is the part of fiber v2's app that its route hooks rely on.
const fiberShape = `package fiber

import "html"

type Route struct {
	use    bool
	Path   string
	Method string
}

type Ctx struct {
	route        *Route
	matched      bool
	method       string
	pathOriginal string
}

type App struct{ stack []*Route }

const StatusNotFound = 404

type Error struct{ Code int }

func (e *Error) Error() string { return "" }

func NewError(code int, message ...string) *Error { return &Error{Code: code} }

func (app *App) next(c *Ctx) (bool, error) {
	for _, route := range app.stack {
		c.route = route
		if !c.matched && !route.use {
			c.matched = true
		}
		return true, nil
	}
	err := NewError(StatusNotFound, "Cannot "+c.method+" "+html.EscapeString(c.pathOriginal))
	return false, err
}
`

// TestPatchRoutesFiber: fiber's app names a request after the first route
// that is not middleware it runs, and unmatched where its route stack runs
// out with none, in v2's shape and in v3's (a default context whose method
// is a method); the patched package compiles with the declarations file.
func TestPatchRoutesFiber(t *testing.T) {
	v3 := strings.NewReplacer(
		"type Ctx struct {", "type DefaultReq struct{ method string }\n\nfunc (r *DefaultReq) Method(override ...string) string { return r.method }\n\ntype DefaultCtx struct {\n\tDefaultReq",
		"\tmethod       string\n", "",
		"func (app *App) next(c *Ctx)", "func (app *App) next(c *DefaultCtx)",
		"\terr := NewError(StatusNotFound, \"Cannot \"+c.method+\" \"+html.EscapeString(c.pathOriginal))\n\treturn false, err\n",
		"\tif c.matched {\n\t\treturn false, NewError(StatusNotFound)\n\t}\n\treturn false, NewError(StatusNotFound, html.EscapeString(c.pathOriginal))\n",
	).Replace(fiberShape)
	v3 = strings.Replace(v3, "if c.matched {\n\t\treturn false, NewError(StatusNotFound)\n\t}", "if c.matched {\n\t\treturn false, ErrNotFound\n\t}", 1) + "\nvar ErrNotFound = NewError(StatusNotFound)\n"
	for _, tc := range []struct{ pkg, shape, unmatched string }{
		{"github.com/gofiber/fiber/v2", fiberShape, `if !c.matched { __matrix_rt_route(c.method, "") }; /*line `},
		{"github.com/gofiber/fiber/v3", v3, `if !c.matched { __matrix_rt_route(c.Method(), "") }; /*line `},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "router.go")
			if err := os.WriteFile(src, []byte(tc.shape), 0o644); err != nil {
				t.Fatal(err)
			}
			files, note, err := PatchRoutes(tc.pkg, []string{src}, t.TempDir())
			if err != nil || note != "" {
				t.Fatalf("PatchRoutes: note %q, err %v", note, err)
			}
			out, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"\t\tc.route = route; if !route.use { __matrix_rt_route(route.Method, route.Path) }/*line ", tc.unmatched} {
				if !strings.Contains(string(out), s) {
					t.Errorf("patched file has no %q:\n%s", s, out)
				}
			}
			if _, _, err := typeCheck(t, "fiber", files); err != nil {
				t.Errorf("the patched package does not type-check: %v", err)
			}
		})
	}
}

// hertzStubs are the packages of hertz's that its HTTP/1 server's and
// engine's route hooks use, reduced to what the hooks need.
var hertzStubs = map[string]string{
	"github.com/cloudwego/hertz/pkg/protocol": `package protocol

type RequestHeader struct{ method, host []byte }

func (h *RequestHeader) Method() []byte         { return h.method }
func (h *RequestHeader) Host() []byte           { return h.host }
func (h *RequestHeader) Peek(key string) []byte { return nil }
func (h *RequestHeader) Set(key, value string)  {}
func (h *RequestHeader) Del(key string)         {}

type Request struct{ Header RequestHeader }

type Response struct{ code int }

func (resp *Response) StatusCode() int { return resp.code }
`,
	"github.com/cloudwego/hertz/pkg/app": `package app

import "github.com/cloudwego/hertz/pkg/protocol"

type RequestContext struct {
	Request  protocol.Request
	Response protocol.Response
}

func (ctx *RequestContext) SetFullPath(p string) {}
`,
	"github.com/cloudwego/hertz/pkg/network": "package network\n\ntype Conn interface{ Close() error }\n",
}

// hertzServerShape is the part of hertz's HTTP/1 server and client that
// their hooks rely on (v0.4 on: the engine gets the loop's own context).
const hertzServerShape = `package http1

import (
	"context"
	"crypto/tls"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/network"
	"github.com/cloudwego/hertz/pkg/protocol"
)

type Core interface {
	ServeHTTP(c context.Context, ctx *app.RequestContext)
}

type Option struct{ TLS *tls.Config }

type Server struct {
	Option
	Core Core
}

func (s Server) Serve(c context.Context, conn network.Conn) (err error) {
	cc := c
	for i := 0; i < 2; i++ {
		ctx := &app.RequestContext{}
		s.Core.ServeHTTP(cc, ctx)
		println("next")
	}
	return nil
}

type HostClient struct {
	Addr  string
	IsTLS bool
}

func (c *HostClient) do(req *protocol.Request, resp *protocol.Response) (bool, error) {
	return false, nil
}
`

// hertzEngineShape is the part of hertz's engine that its hooks rely on.
const hertzEngineShape = `package route

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"
)

type router struct{ method string }

type nodeValue struct {
	handlers []func()
	fullPath string
}

func (r *router) find(path string) nodeValue { return nodeValue{} }

type Engine struct{ trees []*router }

func (engine *Engine) Run() (err error) { return nil }

func (engine *Engine) ServeHTTP(c context.Context, ctx *app.RequestContext) {
	t := engine.trees
	for i, tl := 0, len(t); i < tl; i++ {
		value := t[i].find("/")
		if value.handlers != nil {
			ctx.SetFullPath(value.fullPath)
			return
		}
	}
	serveError(c, ctx, 404, nil)
}

func serveError(c context.Context, ctx *app.RequestContext, code int, defaultMessage []byte) {}
`

// stubImporter imports the packages of srcs from their source, and any
// other from the installed standard library (std, one importer: each
// importer.Default has packages of its own).
type stubImporter struct {
	fset *token.FileSet
	srcs map[string]string
	done map[string]*types.Package
	std  types.Importer
}

func (s *stubImporter) Import(path string) (*types.Package, error) {
	if p, ok := s.done[path]; ok {
		return p, nil
	}
	src, ok := s.srcs[path]
	if !ok {
		return s.std.Import(path)
	}
	f, err := parser.ParseFile(s.fset, path+".go", src, 0)
	if err != nil {
		return nil, err
	}
	p, err := (&types.Config{Importer: s}).Check(path, s.fset, []*ast.File{f}, nil)
	if err != nil {
		return nil, err
	}
	s.done[path] = p
	return p, nil
}

// patchShape patches shape, a file of package pkg, with pkg's route
// rule, failing the test on a note, and type-checks the result with the
// declarations file, importing the packages of stubs from their source,
// and returns the patched file's text and path.
func patchShape(t *testing.T, pkg, shape string, stubs map[string]string) (out, src string) {
	t.Helper()
	src = filepath.Join(t.TempDir(), "shape.go")
	if err := os.WriteFile(src, []byte(shape), 0o644); err != nil {
		t.Fatal(err)
	}
	files, note, err := PatchRoutes(pkg, []string{src}, t.TempDir())
	if err != nil || note != "" {
		t.Fatalf("PatchRoutes: note %q, err %v", note, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	astFiles := parseFiles(t, fset, files)
	imp := &stubImporter{fset: fset, srcs: stubs, done: map[string]*types.Package{}, std: importer.Default()}
	if _, err := (&types.Config{Importer: imp}).Check(pkg, fset, astFiles, nil); err != nil {
		t.Errorf("the patched package does not type-check: %v\n%s", err, b)
	}
	return string(b), src
}

// TestPatchRoutesHertz: each request hertz's HTTP/1 server hands to its
// engine is a dispatch begun in the loop's frame with the request's
// method, header host, scheme and trace context, and ended with its status
// code, whether the engine gets the loop's context (v0.4 on) or the
// connection's; each attempt of a host client's request is a boundary;
// the engine names the scene after the route's full path with the tree's
// method, unmatched where it answers an error, and Run makes the service
// ready. The patched packages type-check. A loop without the engine's call
// is left untouched with a note.
func TestPatchRoutesHertz(t *testing.T) {
	const pkg = "github.com/cloudwego/hertz/pkg/protocol/http1"
	for _, tc := range []struct{ name, shape, ctx string }{
		{"loop context", hertzServerShape, "cc"},
		{"connection context", strings.NewReplacer("\tcc := c\n", "", "s.Core.ServeHTTP(cc, ctx)", "s.Core.ServeHTTP(c, ctx)").Replace(hertzServerShape), "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := patchShape(t, pkg, tc.shape, hertzStubs)
			line := strings.Count(tc.shape[:strings.Index(tc.shape, "s.Core.ServeHTTP(")], "\n") + 1
			begin := regexp.MustCompile(`(?m)^\t\t__matrix_rt_d := __matrix_rt_none\(\); if \*__matrix_rt_on != 0 \{ __matrix_rt_tp, __matrix_rt_bg := ctx\.Request\.Header\.Peek\("Traceparent"\), ctx\.Request\.Header\.Peek\("Baggage"\); ` +
				`__matrix_rt_d = __matrix_rt_begin_request\(1, "http", __matrix_rt_method\(ctx\.Request\.Header\.Method\(\)\), __matrix_rt_host\(ctx\.Request\.Header\.Host\(\)\), s\.TLS != nil\); ` +
				`if __matrix_rt_tp != nil \|\| __matrix_rt_bg != nil \{ __matrix_rt_trace_bytes\(__matrix_rt_d, __matrix_rt_tp, ctx\.Request\.Header\.Peek\("Tracestate"\), __matrix_rt_bg\) \} \}; /\*line [^*]+:` + strconv.Itoa(line) + `:3\*/s\.Core\.ServeHTTP\(` + tc.ctx + `, ctx\); ` +
				`if __matrix_rt_d != nil \{ __matrix_rt_served\(__matrix_rt_d, ctx\.Response\.StatusCode\(\)\) \}/\*line [^*]+:` + strconv.Itoa(line) + `:\d+\*/$`)
			if !begin.MatchString(out) {
				t.Errorf("the engine's call is not a dispatch:\n%s", out)
			}
			const bound = `if *__matrix_rt_on != 0 { if __matrix_rt_ok, __matrix_rt_tp := __matrix_rt_bound_out(2, __matrix_rt_bytes(req.Header.Method()), __matrix_rt_scheme(c.IsTLS), c.Addr, req.Header.Peek("Traceparent") == nil); __matrix_rt_ok { defer __matrix_rt_unbound(); if __matrix_rt_tp != "" { defer __matrix_rt_unset(&req.Header, __matrix_rt_pass_on(&req.Header, __matrix_rt_tp)) } } }; `
			if !strings.Contains(out, "func (c *HostClient) do(req *protocol.Request, resp *protocol.Response) (bool, error) {"+bound) {
				t.Errorf("a client's attempt is not a boundary:\n%s", out)
			}
		})
	}
	t.Run("engine", func(t *testing.T) {
		out, _ := patchShape(t, "github.com/cloudwego/hertz/pkg/route", hertzEngineShape, hertzStubs)
		for _, s := range []string{
			"func (engine *Engine) Run() (err error) {__matrix_rt_serving(); ",
			"\t\t\tctx.SetFullPath(value.fullPath); __matrix_rt_route(t[i].method, value.fullPath)/*line ",
			`func serveError(c context.Context, ctx *app.RequestContext, code int, defaultMessage []byte) {if __matrix_rt_active() { __matrix_rt_route(__matrix_rt_method(ctx.Request.Header.Method()), "") }; `,
		} {
			if !strings.Contains(out, s) {
				t.Errorf("patched file has no %q:\n%s", s, out)
			}
		}
	})
	untouched(t, pkg, strings.Replace(hertzServerShape, "s.Core.ServeHTTP(cc, ctx)", "core := s.Core; core.ServeHTTP(cc, ctx)", 1), `no statement "s.Core.ServeHTTP(c, ctx)"`)
}

// untouched checks that shape, a file of package pkg of another shape than
// its route rule's, is compiled as it is, with a note that has note in it.
func untouched(t *testing.T, pkg, shape, note string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "shape.go")
	if err := os.WriteFile(src, []byte(shape), 0o644); err != nil {
		t.Fatal(err)
	}
	files, got, err := PatchRoutes(pkg, []string{src}, t.TempDir())
	if err != nil || !strings.Contains(got, note) || !slices.Equal(files, []string{src}) {
		t.Errorf("another shape: files %v, note %q, err %v; want it untouched with a note %q", files, got, err, note)
	}
}

// goZeroShape is the part of go-zero's REST router that its hooks rely
// on.
const goZeroShape = `package router

import (
	"net/http"
	"path"
)

type patRouter struct {
	trees    map[string]map[string]http.Handler
	notFound http.Handler
}

func (pr *patRouter) Handle(method, reqPath string, handler http.Handler) error {
	if pr.trees[method] == nil {
		pr.trees[method] = map[string]http.Handler{}
	}
	pr.trees[method][path.Clean(reqPath)] = handler
	return nil
}

func (pr *patRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqPath := path.Clean(r.URL.Path)
	if h, ok := pr.trees[r.Method][reqPath]; ok {
		h.ServeHTTP(w, r)
		return
	}
	allows, ok := pr.methodsAllowed(r.Method, reqPath)
	if !ok {
		pr.notFound.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Allow", allows)
}

func (pr *patRouter) methodsAllowed(method, path string) (string, bool) { return "", false }
`

// TestPatchRoutesGoZero: go-zero's router wraps each route's handler where
// it registers it, so that the request is named after the route's path
// on the goroutine that serves it, before the handler runs, and names it
// unmatched where it finds no route; the patched package compiles with
// the declarations file.
func TestPatchRoutesGoZero(t *testing.T) {
	out, src := patchShape(t, "github.com/zeromicro/go-zero/rest/router", goZeroShape, nil)
	for _, s := range []string{
		"func (pr *patRouter) Handle(method, reqPath string, handler http.Handler) error {if handler != nil { handler = func(h http.Handler, scene string) http.Handler { " +
			"return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { __matrix_rt_named(scene); h.ServeHTTP(w, r) }) }(handler, __matrix_rt_name(method, path.Clean(reqPath))) }; ",
		"\t__matrix_rt_route(r.Method, \"\"); /*line " + src + ":27:2*/allows, ok := pr.methodsAllowed(r.Method, reqPath)",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("patched file has no %q:\n%s", s, out)
		}
	}
}

// echo5Shape is the part of echo v5's context that its hook relies on.
const echo5Shape = `package echo

import "net/http"

const RouteNotFound = "echo_route_not_found"

type RouteInfo struct {
	Method string
	Path   string
}

type PathValues []string

type Context struct {
	request *http.Request
	route   *RouteInfo
}

func (c *Context) InitializeRoute(ri *RouteInfo, pathValues *PathValues) {
	c.route = ri
}
`

// TestPatchRoutesEcho5: echo v5's context names the request after the
// route the router hands it, with the request's method, and unmatched for
// an empty route or a RouteNotFound route; the patched package compiles
// with the declarations file.
func TestPatchRoutesEcho5(t *testing.T) {
	out, _ := patchShape(t, "github.com/labstack/echo/v5", echo5Shape, nil)
	const want = `func (c *Context) InitializeRoute(ri *RouteInfo, pathValues *PathValues) {if ri.Path != "" && ri.Method != RouteNotFound { __matrix_rt_route(c.request.Method, ri.Path) } else { __matrix_rt_route(c.request.Method, "") }; `
	if !strings.Contains(out, want) {
		t.Errorf("patched file has no %q:\n%s", want, out)
	}
}

// natsShape is the part of nats.go's connection that its hooks rely on.
const natsShape = `package nats

import "sync"

type Header map[string][]string

type Msg struct {
	Subject string
	Header  Header
}

type MsgHandler func(msg *Msg)

type Subscription struct {
	mu      sync.Mutex
	Subject string
	mcb     MsgHandler
	msgs    []*Msg
}

type Conn struct{}

func (nc *Conn) waitForMsgs(s *Subscription) {
	for {
		s.mu.Lock()
		mcb := s.mcb
		var m *Msg
		if len(s.msgs) > 0 {
			m, s.msgs = s.msgs[0], s.msgs[1:]
		}
		s.mu.Unlock()
		if m == nil {
			return
		}
		if m != nil {
			mcb(m)
		}
	}
}
`

// TestPatchRoutesNATS: each call of an asynchronous subscription's
// handler is a dispatch of kind message named "nats", begun where the
// subscription's goroutine calls it, with the subscription's subject as
// its scene and the message's trace context headers, and ended after it;
// the patched package compiles with the declarations file.
func TestPatchRoutesNATS(t *testing.T) {
	out, _ := patchShape(t, "github.com/nats-io/nats.go", natsShape, nil)
	line := strings.Count(natsShape[:strings.Index(natsShape, "mcb(m)")], "\n") + 1
	want := regexp.MustCompile(`(?m)^\t\t\t__matrix_rt_d := __matrix_rt_none\(\); if \*__matrix_rt_on != 0 \{ __matrix_rt_d = __matrix_rt_call\(6, "nats", s\.Subject\); ` +
		`if __matrix_rt_d != nil && m\.Header != nil \{ __matrix_rt_trace_map\(__matrix_rt_d, m\.Header\) \} \}; ` +
		`/\*line [^*]+:` + strconv.Itoa(line) + `:4\*/mcb\(m\); if __matrix_rt_d != nil \{ __matrix_rt_end\(__matrix_rt_d, ""\) \}/\*line [^*]+:` + strconv.Itoa(line) + `:10\*/$`)
	if !want.MatchString(out) {
		t.Errorf("the handler's call is not a dispatch:\n%s", out)
	}
}

// natsJSShape is natsShape in a release with JetStream: a subscription
// knows the subject a JetStream push subscription was made with.
var natsJSShape = strings.NewReplacer(
	"\tmsgs    []*Msg\n}", "\tmsgs    []*Msg\n\tjsi     *jsSub\n}\n\ntype jsSub struct{ psubj string }",
).Replace(natsShape)

// TestPatchRoutesNATSJetStream: in a release with JetStream, a message's
// scene is the subject the program subscribed to when the subscription is
// a JetStream push subscription's (read under the subscription's lock),
// else the subscription's subject; the patched package type-checks.
func TestPatchRoutesNATSJetStream(t *testing.T) {
	out, _ := patchShape(t, "github.com/nats-io/nats.go", natsJSShape, nil)
	for _, s := range []string{
		"mcb := s.mcb; __matrix_rt_s := s.Subject; if s.jsi != nil && s.jsi.psubj != \"\" { __matrix_rt_s = s.jsi.psubj }",
		"__matrix_rt_d = __matrix_rt_call(6, \"nats\", __matrix_rt_s); ",
		"mcb(m); if __matrix_rt_d != nil { __matrix_rt_end(__matrix_rt_d, \"\") }",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("patched file has no %q:\n%s", s, out)
		}
	}
}

// natsPublishShape is natsJSShape with the connection's publish as
// releases since v1.49 shape it.
var natsPublishShape = strings.NewReplacer("type Conn struct{}", `type Server struct{ URL *url.URL }

type ServerInfo struct {
	Headers    bool
	MaxPayload int64
}

type Conn struct {
	mu      sync.Mutex
	current *Server
	info    ServerInfo
	closed  bool
}

var (
	ErrHeadersNotSupported = errors.New("nats: headers not supported by this server")
	ErrConnectionClosed    = errors.New("nats: connection closed")
)

func (nc *Conn) isClosed() bool { return nc.closed }

func (nc *Conn) publish(subj, reply string, validateReply bool, hdr, data []byte) error {
	nc.mu.Lock()
	if len(hdr) > 0 && !nc.info.Headers {
		nc.mu.Unlock()
		return ErrHeadersNotSupported
	}
	if nc.isClosed() {
		nc.mu.Unlock()
		return ErrConnectionClosed
	}
	nc.mu.Unlock()
	return nil
}`, `import "sync"`, "import (\n\t\"errors\"\n\t\"net/url\"\n\t\"sync\"\n)").Replace(natsJSShape)

// TestPatchRoutesNATSPublish: each message a connection publishes is a
// boundary of kind publish, begun where publish holds the connection's
// lock, that passes the dispatch's trace context on in the message's
// headers when the server takes them, in each shape of publish; a release
// whose publish is shaped otherwise keeps its subscriptions' dispatches.
// The patched package type-checks.
func TestPatchRoutesNATSPublish(t *testing.T) {
	const hook = "if *__matrix_rt_on != 0 { __matrix_rt_host := \"\"; if nc.current != nil && nc.current.%[1]s != nil { __matrix_rt_host = nc.current.%[1]s.Host }; " +
		"if __matrix_rt_ok, __matrix_rt_tp := __matrix_rt_bound_out(4, \"nats\", __matrix_rt_host, \"\", __matrix_rt_nats_pass(nc.info.Headers, subj, hdr)); __matrix_rt_ok { " +
		"defer __matrix_rt_unbound(); if __matrix_rt_tp != \"\" { hdr = __matrix_rt_nats_header(hdr, __matrix_rt_tp, len(data), nc.info.MaxPayload) } } }; "
	v148 := strings.NewReplacer("type Server struct{ URL *url.URL }", "type srv struct{ url *url.URL }", "current *Server", "current *srv",
		"ServerInfo", "serverInfo").Replace(natsPublishShape)
	v111 := strings.Replace(v148, "reply string, validateReply bool, hdr", "reply string, hdr", 1)
	other := strings.Replace(natsPublishShape, "if nc.isClosed() {", "if nc.closed {", 1)
	for _, tc := range []struct {
		name, shape, url string
	}{
		{"v1.49", natsPublishShape, "URL"},
		{"v1.48", v148, "url"},
		{"v1.11", v111, "url"},
		{"other", other, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := patchShape(t, "github.com/nats-io/nats.go", tc.shape, nil)
			if !strings.Contains(out, "mcb(m); if __matrix_rt_d != nil { __matrix_rt_end(__matrix_rt_d, \"\") }") {
				t.Errorf("the handler's call is not a dispatch:\n%s", out)
			}
			want := ""
			if tc.url != "" {
				want = fmt.Sprintf(hook, tc.url)
			}
			if got := strings.Contains(out, "__matrix_rt_bound_out(4"); got != (want != "") {
				t.Errorf("publish is a boundary: %v, want %v:\n%s", got, want != "", out)
			}
			if want != "" && !regexp.MustCompile(`(?m)^\t`+regexp.QuoteMeta(want)+`/\*line [^*]+:\d+:2\*/if nc\.isClosed\(\) \{$`).MatchString(out) {
				t.Errorf("publish has no %q before its closed connection's check:\n%s", want, out)
			}
		})
	}
}

// jetstreamShape is the part of the jetstream package's pull consumer that
// its hook relies on.
const jetstreamShape = `package jetstream

type ConsumerConfig struct {
	FilterSubject  string
	FilterSubjects []string
}

type ConsumerInfo struct{ Config ConsumerConfig }

type Msg interface{ Subject() string }

type MessageHandler func(msg Msg)

type PullConsumeOpt interface{ configureConsume() }

type ConsumeContext interface{ Stop() }

type pullConsumer struct {
	stream string
	info   *ConsumerInfo
}

func (p *pullConsumer) CachedInfo() *ConsumerInfo { return p.info }

func (p *pullConsumer) Consume(handler MessageHandler, opts ...PullConsumeOpt) (ConsumeContext, error) {
	if handler == nil {
		return nil, nil
	}
	go func() { handler(nil) }()
	return nil, nil
}
`

// TestPatchRoutesJetStream: a pull consumer's Consume wraps the handler so
// that each message is named after the consumer's filter subject, or its
// only one of several, or else its stream; the wrapper gets no hook and
// the patched package type-checks.
func TestPatchRoutesJetStream(t *testing.T) {
	const pkg = "github.com/nats-io/nats.go/jetstream"
	out, _ := patchShape(t, pkg, jetstreamShape, nil)
	const want = "func (p *pullConsumer) Consume(handler MessageHandler, opts ...PullConsumeOpt) (ConsumeContext, error) {" +
		"if handler != nil { __matrix_rt_s := p.stream; if i := p.CachedInfo(); i != nil { if i.Config.FilterSubject != \"\" { __matrix_rt_s = i.Config.FilterSubject } " +
		"else if len(i.Config.FilterSubjects) == 1 { __matrix_rt_s = i.Config.FilterSubjects[0] } }; " +
		"handler = func(h MessageHandler, scene string) MessageHandler { return func(msg Msg) { __matrix_rt_named(scene); h(msg) } }(handler, __matrix_rt_s) }; "
	if !strings.Contains(out, want) {
		t.Errorf("patched file has no %q:\n%s", want, out)
	}
	p, _, _ := rewriteSourceOpts(t, out, Options{PkgPath: pkg})
	reasons := map[string]string{}
	for _, s := range p.Skips {
		reasons[s.Name] = s.Reason
	}
	for _, name := range []string{"(*pullConsumer).Consume.func1", "(*pullConsumer).Consume.func1.1"} {
		if reasons[name] != ReasonRouteWrapper {
			t.Errorf("%s skipped for %q, want %q", name, reasons[name], ReasonRouteWrapper)
		}
	}
	var hooked []string
	for _, f := range p.Funcs {
		hooked = append(hooked, f.Name)
	}
	if !slices.Contains(hooked, "(*pullConsumer).Consume.func2") {
		t.Errorf("hooked %v: want the consumer's own closure (*pullConsumer).Consume.func2", hooked)
	}
	// A release whose consumer caches no info is left as it is.
	untouched(t, pkg, strings.Replace(jetstreamShape, "CachedInfo", "Info", 1), "CachedInfo")
}

// connectShape is the part of connect's handler that its hook relies on.
const connectShape = `package connect

import "net/http"

type Spec struct{ Procedure string }

type Handler struct{ spec Spec }

func (h *Handler) ServeHTTP(responseWriter http.ResponseWriter, request *http.Request) {
	responseWriter.WriteHeader(http.StatusOK)
}
`

// TestPatchRoutesConnect: a connect handler names the request after its
// procedure; the patched package compiles with the declarations file.
func TestPatchRoutesConnect(t *testing.T) {
	out, _ := patchShape(t, "connectrpc.com/connect", connectShape, nil)
	const want = "func (h *Handler) ServeHTTP(responseWriter http.ResponseWriter, request *http.Request) {__matrix_rt_route(request.Method, h.spec.Procedure); "
	if !strings.Contains(out, want) {
		t.Errorf("patched file has no %q:\n%s", want, out)
	}
}

// connect2Shape is the part of connect v2's HTTP transport that its hooks
// rely on, and connect2Stubs the part of connect v2 it uses.
const connect2Shape = `package connecthttp

import (
	"net/http"

	"connectrpc.com/connect/v2"
)

type ServeMux interface {
	Handle(pattern string, handler http.Handler)
}

type Option interface{}

type options struct{}

func defaultOptions() options { return options{} }

type handler struct{ spec connect.Spec }

func (h *handler) ServeHTTP(responseWriter http.ResponseWriter, request *http.Request) {
	responseWriter.WriteHeader(http.StatusOK)
}

func newProcedureHandler(server *connect.Server, spec connect.Spec, opts *options) http.Handler {
	return &handler{spec: spec}
}

func newUnknownMethodHandler(server *connect.Server, opts *options) http.Handler {
	return newProcedureHandler(server, connect.Spec{}, opts)
}

func Mount(mux ServeMux, server *connect.Server, options ...Option) {
	opts := defaultOptions()
	for spec := range server.Specs() {
		mux.Handle(spec.Procedure, newProcedureHandler(server, spec, &opts))
	}
	mux.Handle("/", newUnknownMethodHandler(server, &opts))
}
`

var connect2Stubs = map[string]string{"connectrpc.com/connect/v2": `package connect

import "iter"

type Spec struct{ Procedure string }

type Server struct{ specs []Spec }

func (s *Server) Specs() iter.Seq[Spec] { return nil }
`}

// TestPatchRoutesConnect2: connect v2's transport keeps each procedure it
// mounts, and its handler names the request after its procedure (or
// unmatched, see RouteConnect); the patched package type-checks with both
// declarations files.
func TestPatchRoutesConnect2(t *testing.T) {
	out, _ := patchShape(t, "connectrpc.com/connect/v2/connecthttp", connect2Shape, connect2Stubs)
	for _, want := range []string{
		"func (h *handler) ServeHTTP(responseWriter http.ResponseWriter, request *http.Request) {__matrix_rt_connect_route(request.Method, h.spec.Procedure); ",
		"mux.Handle(spec.Procedure, newProcedureHandler(server, spec, &opts)); __matrix_rt_connect_mounted(spec.Procedure)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("patched file has no %q:\n%s", want, out)
		}
	}
}

// gatewayShape is the part of grpc-gateway's runtime that its hook relies
// on.
const gatewayShape = `package runtime

import (
	"context"
	"net/http"
	"time"
)

type ServeMux struct{}

type AnnotateContextOption func(ctx context.Context) context.Context

type patternKey struct{}

var DefaultContextTimeout = 0 * time.Second

func HTTPPathPattern(ctx context.Context) (string, bool) {
	p, ok := ctx.Value(patternKey{}).(string)
	return p, ok
}

func annotateContext(ctx context.Context, mux *ServeMux, req *http.Request, rpcMethodName string, options ...AnnotateContextOption) (context.Context, error) {
	for _, o := range options {
		ctx = o(ctx)
	}
	timeout := DefaultContextTimeout
	if timeout != 0 {
		ctx, _ = context.WithTimeout(ctx, timeout)
	}
	return ctx, nil
}
`

// TestPatchRoutesGateway: grpc-gateway names a request after the path
// template its generated handler annotates the context with, once the
// options are applied, while the goroutine records; the patched package
// compiles with the declarations file.
func TestPatchRoutesGateway(t *testing.T) {
	const pkg = "github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	out, src := patchShape(t, pkg, gatewayShape, nil)
	want := "\tif __matrix_rt_active() { if p, ok := HTTPPathPattern(ctx); ok { __matrix_rt_route(req.Method, p) } }; /*line " + src + ":26:2*/timeout := DefaultContextTimeout"
	if !strings.Contains(out, want) {
		t.Errorf("patched file has no %q:\n%s", want, out)
	}
	// A release without the template (before v2.7) is left untouched.
	untouched(t, pkg, strings.Replace(gatewayShape, "func HTTPPathPattern(", "func httpPathPattern(", 1), "no HTTPPathPattern")
}

// httprouterShape is the part of httprouter's router that its hooks rely
// on.
const httprouterShape = `package httprouter

import "net/http"

type Params []string

type Handle func(http.ResponseWriter, *http.Request, Params)

type Router struct{ handles map[string]Handle }

func (r *Router) Handle(method, path string, handle Handle) {
	r.handles[method+" "+path] = handle
}

func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h := r.handles[req.Method+" "+req.URL.Path]; h != nil {
		h(w, req, nil)
	}
}
`

// TestRouteWrappersNotInstrumented: the closures a route hook wraps
// around a handler as httprouter or go-zero registers it get no hook and
// are listed as route wrappers, so that the call tree goes from the
// router to the handler; the router's own functions and closures keep
// theirs.
func TestRouteWrappersNotInstrumented(t *testing.T) {
	for _, tc := range []struct {
		pkg, shape, recv string
	}{
		{"github.com/julienschmidt/httprouter", httprouterShape + `
func (r *Router) Walk(f func(string)) {
	for k := range r.handles {
		func() { f(k) }()
	}
}
`, "(*Router)"},
		{"github.com/zeromicro/go-zero/rest/router", goZeroShape + `
func (pr *patRouter) Walk(f func(string)) {
	for k := range pr.trees {
		func() { f(k) }()
	}
}
`, "(*patRouter)"},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			out, _ := patchShape(t, tc.pkg, tc.shape, nil)
			p, _, _ := rewriteSourceOpts(t, out, Options{PkgPath: tc.pkg})
			reasons := map[string]string{}
			for _, s := range p.Skips {
				reasons[s.Name] = s.Reason
			}
			for _, name := range []string{tc.recv + ".Handle.func1", tc.recv + ".Handle.func1.1"} {
				if reasons[name] != ReasonRouteWrapper {
					t.Errorf("%s skipped for %q, want %q", name, reasons[name], ReasonRouteWrapper)
				}
			}
			var hooked []string
			for _, f := range p.Funcs {
				hooked = append(hooked, f.Name)
			}
			for _, name := range []string{tc.recv + ".Handle", tc.recv + ".Walk.func1"} {
				if !slices.Contains(hooked, name) {
					t.Errorf("%s has no hook (hooked: %v; skipped: %v)", name, hooked, reasons)
				}
			}
		})
	}
}
