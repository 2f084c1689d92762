package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/defaults"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/gocmd"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/zerocode"
	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/rewrite"
)

// config is the build configuration: flags inside the -toolexec string
// override the MATRIX_* environment, which overrides the defaults.
// MATRIX_ZEROCODE_MODULE, environment only, is checked here and read where
// it is used (see zerocode.EnvModule).
type config struct {
	mapPath       string // method mapping file (read it with mapFile)
	mapSet        bool   // the map was named explicitly: its owner is not checked
	blacklistPath string // blacklist file (read it with blacklistFile)
	blacklistSet  bool   // the blacklist was named explicitly: it must exist
	filesDone     bool   // mapPath and blacklistPath are complete (defaultFiles)
	inlineBudget  int
	returnExits   bool // exit hooks at the returns (-exits returns or copy)
	copyBudget    int  // hook-free copies up to this cost (-exits copy)
	hookBounded   bool // instrument bounded functions too (-bounded hook)
	logPath       string
	zeroCode      string          // zerocode.Auto, zerocode.On or zerocode.Off
	otlp          bool            // zero-code programs link the OTLP sink (see otlpDefault)
	toolPath      string          // the tool cmd/go runs through us, if any
	goMinor       int             // the toolchain's Go release, 1.goMinor (0: not told; see unsupportedTarget)
	debugHooks    bool            // build the runtime variant that can print every hook
	strict        bool            // a rewrite the compiler rejects fails the build
	debugReject   map[string]bool // functions (pkg.Func) whose rewrite is made to fail
	debugPanic    map[string]bool // packages whose rewrite is made to panic
	log           *slog.Logger
	getenv        func(string) string
	posBases      []string // the directories mapPos makes positions relative to
}

func parseConfig(args []string, getenv func(string) string) (*config, []string, error) {
	cfg := &config{getenv: getenv}
	fs := flag.NewFlagSet("matrixexec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.mapPath, "map", getenv("MATRIX_MAP"), "method mapping file")
	fs.StringVar(&cfg.blacklistPath, "blacklist", getenv("MATRIX_BLACKLIST"), "blacklist file")
	budget := getenv("MATRIX_INLINE_BUDGET")
	fs.StringVar(&budget, "inline-budget", budget, "inlining cost under which functions are skipped")
	exits := getenv("MATRIX_EXITS")
	fs.StringVar(&exits, "exits", exits, "where exit hooks go: copy, returns or defer")
	copyBudget := getenv("MATRIX_COPY_BUDGET")
	fs.StringVar(&copyBudget, "copy-budget", copyBudget, "cost up to which a function keeps a hook-free copy")
	bounded := getenv("MATRIX_BOUNDED")
	fs.StringVar(&bounded, "bounded", bounded, "functions proven bounded: skip or hook")
	fs.StringVar(&cfg.logPath, "log", getenv("MATRIX_LOG"), "diagnostics file")
	fs.StringVar(&cfg.zeroCode, "zerocode", getenv("MATRIX_ZEROCODE"), "zero-code mode: auto, on or off")
	otlpSink := getenv("MATRIX_OTLP")
	fs.StringVar(&otlpSink, "otlp", otlpSink, "zero-code programs link the OTLP sink: on or off (default on, off with MATRIX_ZEROCODE_MODULE)")
	strict := getenv("MATRIX_STRICT")
	fs.BoolFunc("strict", "fail the build when the compiler rejects an instrumented package", func(v string) error {
		if v == "true" {
			strict = "1"
		} else {
			strict = "0"
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return cfg, []string{"help"}, nil
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
			return nil, nil, fmt.Errorf("unknown option %s (see matrixexec help)", name)
		}
		return nil, nil, err
	}
	if budget != "" {
		n, err := strconv.Atoi(budget)
		if err != nil {
			return nil, nil, fmt.Errorf("bad inline budget %q (MATRIX_INLINE_BUDGET or -inline-budget): want an integer", budget)
		}
		cfg.inlineBudget = n
	}
	switch exits {
	case "", "copy":
		cfg.returnExits = true
		cfg.copyBudget = rewrite.DefaultCopyBudget
		if copyBudget != "" {
			n, err := strconv.Atoi(copyBudget)
			if err != nil {
				return nil, nil, fmt.Errorf("bad copy budget %q (MATRIX_COPY_BUDGET or -copy-budget): want an integer", copyBudget)
			}
			cfg.copyBudget = n
		}
	case "returns":
		cfg.returnExits = true
	case "defer":
	default:
		return nil, nil, fmt.Errorf("bad exit hook mode %q (MATRIX_EXITS or -exits): want copy, returns or defer", exits)
	}
	switch bounded {
	case "", "skip":
	case "hook":
		cfg.hookBounded = true
	default:
		return nil, nil, fmt.Errorf("bad bounded-function mode %q (MATRIX_BOUNDED or -bounded): want skip or hook", bounded)
	}
	switch cfg.zeroCode {
	case "":
		cfg.zeroCode = zerocode.Auto
	case zerocode.Auto, zerocode.On, zerocode.Off:
	default:
		return nil, nil, fmt.Errorf("bad zero-code mode %q (MATRIX_ZEROCODE or -zerocode): want auto, on or off", cfg.zeroCode)
	}
	switch otlpSink {
	case "":
		cfg.otlp = otlpDefault(getenv(zerocode.EnvModule))
	case "off":
	case "on":
		cfg.otlp = true
	default:
		return nil, nil, fmt.Errorf("bad OTLP sink setting %q (MATRIX_OTLP or -otlp): want on or off", otlpSink)
	}
	if err := zerocode.CheckModule(getenv(zerocode.EnvModule)); err != nil {
		return nil, nil, err
	}
	cfg.blacklistSet = cfg.blacklistPath != ""
	cfg.mapSet = cfg.mapPath != ""
	cfg.debugHooks = getenv("MATRIX_DEBUG_HOOKS") == "1"
	switch strict {
	case "", "0":
	case "1":
		cfg.strict = true
	default:
		return nil, nil, fmt.Errorf("bad strict setting %q (MATRIX_STRICT): want 1 or 0", strict)
	}
	cfg.debugReject = nameSet(getenv("MATRIX_DEBUG_REJECT"))
	cfg.debugPanic = nameSet(getenv("MATRIX_DEBUG_PANIC"))
	// Diagnostics are JSON lines (time, level, msg, then the fields).
	debugJSON := func(w io.Writer) slog.Handler {
		return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	switch cfg.logPath {
	case "":
		cfg.log = slog.New(slog.DiscardHandler)
	case "stderr":
		cfg.log = slog.New(debugJSON(os.Stderr))
	default:
		f, err := os.OpenFile(cfg.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open log: %w", err)
		}
		cfg.log = slog.New(debugJSON(f)).With("pid", os.Getpid())
	}
	return cfg, fs.Args(), nil
}

// mapFile returns the id map's path: the one given, or the default (see
// defaultFiles).
func (cfg *config) mapFile() string {
	cfg.defaultFiles()
	return cfg.mapPath
}

// blacklistFile returns the blacklist's path: the one given, or the
// default (see defaultFiles).
func (cfg *config) blacklistFile() string {
	cfg.defaultFiles()
	return cfg.blacklistPath
}

// defaultFiles fills in the map and blacklist paths not given, once:
// .matrix in the module (or workspace) root. Finding the root costs a walk
// up the directory tree and a look at the go command's line, which the
// questions cmd/go asks most (the tool ids) do not need.
func (cfg *config) defaultFiles() {
	if cfg.filesDone {
		return
	}
	cfg.filesDone = true
	getenv := cfg.getenv
	if cfg.mapPath == "" || cfg.blacklistPath == "" {
		dir := defaults.FilesDir(getenv, goCommandLine)
		if cfg.mapPath == "" {
			cfg.mapPath = filepath.Join(dir, defaults.Map)
		}
		if cfg.blacklistPath == "" {
			cfg.blacklistPath = filepath.Join(dir, defaults.Blacklist)
		}
	}
	for _, p := range []*string{&cfg.mapPath, &cfg.blacklistPath} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
}

// openMap opens the id map. A new map records the build's module (see
// mapOwner); the map at the default location must belong to it, while an
// explicitly named map (-map, MATRIX_MAP) may be shared on purpose.
func (cfg *config) openMap() (*idalloc.Map, error) {
	m, err := idalloc.OpenWith(cfg.mapFile(), cfg.mapOptions())
	return m, mapError(err)
}

// mapIdentity returns the identity of the id map, which it opens (or
// creates) and checks like openMap but without reading its records.
func (cfg *config) mapIdentity() (string, error) {
	id, _, err := idalloc.Identify(cfg.mapFile(), cfg.mapOptions())
	return id, mapError(err)
}

// mapOptions are the options the map is opened with: its owner, checked
// unless the map was named explicitly, and the directory of high-water
// marks that gives a map restored to an earlier content a new identity.
func (cfg *config) mapOptions() idalloc.Options {
	return idalloc.Options{Owner: cfg.mapOwner(), CheckOwner: !cfg.mapSet, MarkDir: defaults.UserCacheDir("maps")}
}

// mapError adds to an error of the map what matrixexec offers to fix it.
func mapError(err error) error {
	var foreign *idalloc.ForeignMapError
	var file *idalloc.FileError
	switch {
	case errors.As(err, &foreign):
		return fmt.Errorf("%w (-map FILE or MATRIX_MAP=FILE: a map named explicitly is not checked, so modules can share one on purpose)", err)
	case errors.As(err, &file) && file.Hint != "":
		return fmt.Errorf("%w; -map FILE or MATRIX_MAP=FILE puts the map elsewhere", err)
	}
	return err
}

// mapOwner returns what a map created by this build belongs to: the modules
// of the go.work workspace in use, else the main module, else nothing (a
// build outside any module).
func (cfg *config) mapOwner() idalloc.Owner {
	getenv := cfg.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	root := gocmd.ModuleRoot(getenv)
	var (
		owner idalloc.Owner
		err   error
	)
	work := getenv("GOWORK")
	switch {
	case work == "off":
		owner, err = idalloc.ModuleOwner(filepath.Join(root, "go.mod"))
	case work != "" && filepath.IsAbs(work):
		owner, err = idalloc.WorkspaceOwner(work)
	case exists(filepath.Join(root, "go.work")):
		owner, err = idalloc.WorkspaceOwner(filepath.Join(root, "go.work"))
	default:
		owner, err = idalloc.ModuleOwner(filepath.Join(root, "go.mod"))
	}
	if err != nil {
		// cmd/go reports a broken go.mod or go.work itself.
		cfg.log.Debug("map owner unknown", "error", err)
	}
	return owner
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// goCommandLine returns the command line of the go command that runs
// matrixexec, nil if unknown (tests replace it).
var goCommandLine = gocmd.Line

// zeroCodeConfig returns what zero-code mode takes from the configuration.
func (cfg *config) zeroCodeConfig() *zerocode.Config {
	zc := &zerocode.Config{Mode: cfg.zeroCode, OTLP: cfg.otlp, MapPath: cfg.mapFile(), Log: cfg.log,
		ConfigHash: func() (string, error) { return configHash(cfg) }}
	if cfg.blacklistSet || exists(cfg.blacklistFile()) {
		zc.Blacklist = cfg.blacklistFile()
	}
	return zc
}

// nameSet returns the set of the comma-separated names of list, or nil
// for none.
func nameSet(list string) map[string]bool {
	var set map[string]bool
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			if set == nil {
				set = map[string]bool{}
			}
			set[name] = true
		}
	}
	return set
}

// otlpDefault says whether zero-code programs link the OTLP sink when
// MATRIX_OTLP and -otlp leave it unsaid: they do, so that the binary a
// service deploys exports when MATRIX_REPORT and the OTEL_* variables say
// so, with no rebuild. The sink's encoder (protobuf's protowire) then
// comes from the program's own module graph, in the build the program
// links. With a MATRIX_ZEROCODE_MODULE (module), the tracer is built in
// another module's graph, whose protobuf could be another build than the
// program's own and stop the link: there the default is off.
func otlpDefault(module string) bool { return module == "" }
