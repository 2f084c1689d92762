package otlp

import "testing"

func TestCodeFilePath(t *testing.T) {
	for _, tc := range []struct{ fn, file, want string }{
		{"github.com/go-chi/chi/v5.(*Mux).ServeHTTP", "/root/go/pkg/mod/github.com/go-chi/chi/v5@v5.2.1/mux.go", "github.com/go-chi/chi/v5@v5.2.1/mux.go"},
		{"net/http.(*conn).serve", "/usr/local/go/src/net/http/server.go", "net/http/server.go"},
		{"github.com/matrixgo/matrix/examples/shop.(*orderService).checkout", "/work/main/examples/shop/main.go", "examples/shop/main.go"},
		{"github.com/matrixgo/matrix/examples/shop.newMux.func2", "/home/u/src/matrix/examples/shop/main.go", "matrix/examples/shop/main.go"},
		{"example.com/shop.slow", "/src/shop/main.go", "shop/main.go"},
		{"example.com/shop.F[...].func1", "/src/shop/f.go", "shop/f.go"},
		{"example.com/m.Root", "/build/m/root.go", "m/root.go"},
		{"example.com/gen.F", "/build/other/gen.y", "/build/other/gen.y"},
		{"example.com/shop.slow", "example.com/shop/main.go", "example.com/shop/main.go"},
		{"example.com/shop.slow", "", ""},
		{"", "/src/shop/main.go", "/src/shop/main.go"},
		{"example.com/w.F", `C:\build\w\f.go`, "w/f.go"},
	} {
		if got := codeFilePath(tc.fn, tc.file); got != tc.want {
			t.Errorf("codeFilePath(%q, %q) = %q, want %q", tc.fn, tc.file, got, tc.want)
		}
	}
}
