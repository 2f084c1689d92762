package rewrite

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"

	"github.com/matrixgo/matrix/inject"
)

// gField is the fields added to runtime.g: the goroutine's ring buffer,
// nil while it is not inside a dispatch; the state of the interval it is
// not running in (see matrixStatus in the recorder's runtime file); and
// when its current system call began.
const gField = "matrixBeat unsafe.Pointer; matrixState uint32; matrixSys uint64; "

// deferFastPath is inserted at the top of runtime.deferreturn (see
// matrixDeferNone in the recorder's runtime file, package inject).
const deferFastPath = "if matrixDeferNone(sys.GetCallerSP()) { return }; "

// A funcHook is a statement inserted at the top of a runtime function. The
// function's signature must read exactly sig (the text from its opening
// parenthesis to the end of its results), so that a release that changes
// it fails the build with a message instead of miscompiling the hook.
type funcHook struct {
	file, fn, sig, stmt string
}

// runtimeHooks are the statements PatchRuntime inserts into the runtime.
// Each one costs a goroutine that is not recording one load and one branch;
// the functions they call are in the recorder's runtime file.
//
//   - deferreturn: its fast path (see PatchRuntime).
//   - gopark: a recording goroutine that is about to block writes the start
//     of a wait, with the reason and the program counters where it blocked.
//   - casgstatus: every status change of a recording goroutine ends or
//     starts the interval it is not running in (wait, runnable).
//   - reentersyscall, entersyscallblock, exitsyscall: a system call of a
//     recording goroutine that took at least a clock tick is recorded.
//   - gdestroy: a goroutine that exits clears its slot, and a dispatch it
//     leaves open is marked abandoned.
//
// casgstatus and the system call functions are nosplit (the latter also
// run without a P and without write barriers): what they call is nosplit
// and writes only integers.
var runtimeHooks = []funcHook{
	{"panic.go", "deferreturn", "()", deferFastPath},
	{"proc.go", "gopark", "(unlockf func(*g, unsafe.Pointer) bool, lock unsafe.Pointer, reason waitReason, traceReason traceBlockReason, traceskip int)",
		"if getg().matrixBeat != nil { matrixPark(reason) }; "},
	{"proc.go", "casgstatus", "(gp *g, oldval, newval uint32)",
		"if gp.matrixBeat != nil { matrixStatus(gp, oldval, newval) }; "},
	{"proc.go", "reentersyscall", "(pc, sp, bp uintptr)",
		"if getg().matrixBeat != nil { matrixSyscallEnter() }; "},
	{"proc.go", "entersyscallblock", "()",
		"if getg().matrixBeat != nil { matrixSyscallEnter() }; "},
	{"proc.go", "exitsyscall", "()",
		"if getg().matrixBeat != nil { matrixSyscallExit() }; "},
	{"proc.go", "gdestroy", "(gp *g)",
		"if gp.matrixBeat != nil { matrixGoexit(gp) }; "},
}

// PatchRuntime prepares the files of package runtime: it adds the fields the
// recorder needs to runtime.g (in runtime2.go), the statements of
// runtimeHooks at the top of their functions, and the recorder's files (see
// package inject). It writes what it changes to dir and returns the new
// file list. With debug, the hooks print every call when
// MATRIX_DEBUG_HOOKS=1 is set at run time; without it they carry no trace
// of that code.
//
// No line of the patched files moves: the fields are inserted before the
// closing brace of the struct, on that brace's line, and each statement
// after its function's opening brace, followed by a line directive that
// gives the rest of the line its original column.
//
// Why deferreturn: the compiler open-codes at most 15 returns × defers per
// function. An instrumented function with more return statements gets a
// deferred exit hook that is not open-coded, and so calls deferreturn on
// every return even when the hook was never deferred (the recorder off).
// deferreturn zeroes a _panic record and walks a small state machine to
// find that there is nothing to run; the fast path finds it in two loads.
func PatchRuntime(files []string, dir string, debug bool) ([]string, error) {
	out := append([]string(nil), files...)
	byFile := map[string][]funcHook{"runtime2.go": nil}
	for _, h := range runtimeHooks {
		byFile[h.file] = append(byFile[h.file], h)
	}
	done := map[string]bool{}
	for i, path := range files {
		name := filepath.Base(path)
		hooks, ok := byFile[name]
		if !ok {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("patch runtime: %w", err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("patch runtime: %w", err)
		}
		sf := &srcFile{path: path, src: src, ast: f, lineNames: lineDirectiveNames(f, path)}
		var content []byte
		if name == "runtime2.go" {
			content, err = patchGStruct(fset, f, sf)
		} else {
			content, err = insertHooks(fset, f, sf, hooks)
		}
		if err != nil {
			return nil, fmt.Errorf("patch runtime: %s: %w", path, err)
		}
		dst := filepath.Join(dir, name)
		if err := os.WriteFile(dst, content, 0o644); err != nil {
			return nil, fmt.Errorf("patch runtime: %w", err)
		}
		out[i] = dst
		done[name] = true
	}
	for name := range byFile {
		if !done[name] {
			return nil, fmt.Errorf("patch runtime: %s not among the compiled files; matrixexec does not support this Go release", name)
		}
	}
	src, consts, err := inject.Runtime(debug)
	if err != nil {
		return nil, fmt.Errorf("patch runtime: %w", err)
	}
	for _, f := range []struct {
		name    string
		content []byte
	}{{inject.RuntimeFileName, src}, {inject.RuntimeConstFileName, consts}} {
		extra := filepath.Join(dir, f.name)
		if err := os.WriteFile(extra, f.content, 0o644); err != nil {
			return nil, fmt.Errorf("patch runtime: %w", err)
		}
		out = append(out, extra)
	}
	return out, nil
}

// patchGStruct adds gField to the struct runtime.g.
func patchGStruct(fset *token.FileSet, f *ast.File, sf *srcFile) ([]byte, error) {
	closing := gStructClosing(f)
	if !closing.IsValid() {
		return nil, errors.New("no type g struct")
	}
	off := fset.Position(closing).Offset
	content := fmt.Appendf(nil, "//line %s:1:1\n", sf.path)
	content = append(content, sf.src[:off]...)
	content = append(content, gField...)
	return append(content, sf.src[off:]...), nil
}

// insertHooks inserts each hook's statement at the top of its function.
func insertHooks(fset *token.FileSet, f *ast.File, sf *srcFile, hooks []funcHook) ([]byte, error) {
	type insertion struct {
		off  int
		text string
	}
	var ins []insertion
	for _, h := range hooks {
		var fd *ast.FuncDecl
		for _, d := range f.Decls {
			if x, ok := d.(*ast.FuncDecl); ok && x.Recv == nil && x.Name.Name == h.fn && x.Body != nil {
				fd = x
				break
			}
		}
		if fd == nil {
			return nil, fmt.Errorf("no func %s; matrixexec does not support this Go release", h.fn)
		}
		sig := string(sf.src[fset.Position(fd.Type.Params.Opening).Offset:fset.Position(fd.Type.End()).Offset])
		if sig != h.sig {
			return nil, fmt.Errorf("%s has a new signature in this Go release, %s (want %s); matrixexec does not support it", h.fn, sig, h.sig)
		}
		ins = append(ins, insertion{fset.Position(fd.Body.Lbrace).Offset + 1, h.stmt + resumeDirective(fset, sf, fd.Body.Lbrace)})
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].off < ins[j].off })
	content := fmt.Appendf(nil, "//line %s:1:1\n", sf.path)
	prev := 0
	for _, in := range ins {
		content = append(content, sf.src[prev:in.off]...)
		content = append(content, in.text...)
		prev = in.off
	}
	return append(content, sf.src[prev:]...), nil
}

func gStructClosing(f *ast.File) token.Pos {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			if ts.Name.Name != "g" {
				continue
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				return st.Fields.Closing
			}
		}
	}
	return token.NoPos
}
