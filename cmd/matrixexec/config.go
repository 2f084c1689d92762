package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// config is the build configuration: flags inside the -toolexec string
// override the MATRIX_* environment, which overrides the defaults.
type config struct {
	mapPath       string // method mapping file
	blacklistPath string // blacklist file
	blacklistSet  bool   // the blacklist was named explicitly: it must exist
	inlineBudget  int
	logPath       string
	zeroCode      string // zeroAuto, zeroOn or zeroOff
	toolPath      string // the tool cmd/go runs through us, if any
	log           zerolog.Logger
}

// Default locations, relative to the module (or workspace) root.
const (
	defaultDir       = ".matrix"
	defaultMap       = "methodMapping.txt"
	defaultBlacklist = "blacklist.txt"
)

func parseConfig(args []string, getenv func(string) string) (*config, []string, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("matrixexec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.mapPath, "map", getenv("MATRIX_MAP"), "method mapping file")
	fs.StringVar(&cfg.blacklistPath, "blacklist", getenv("MATRIX_BLACKLIST"), "blacklist file")
	budget := getenv("MATRIX_INLINE_BUDGET")
	fs.StringVar(&budget, "inline-budget", budget, "inlining cost under which functions are skipped")
	fs.StringVar(&cfg.logPath, "log", getenv("MATRIX_LOG"), "diagnostics file")
	fs.StringVar(&cfg.zeroCode, "zerocode", getenv("MATRIX_ZEROCODE"), "zero-code mode: auto, on or off")
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
	switch cfg.zeroCode {
	case "":
		cfg.zeroCode = zeroAuto
	case zeroAuto, zeroOn, zeroOff:
	default:
		return nil, nil, fmt.Errorf("bad zero-code mode %q (MATRIX_ZEROCODE or -zerocode): want auto, on or off", cfg.zeroCode)
	}
	cfg.blacklistSet = cfg.blacklistPath != ""
	if cfg.mapPath == "" || cfg.blacklistPath == "" {
		root := moduleRoot(getenv)
		if cfg.mapPath == "" {
			cfg.mapPath = filepath.Join(root, defaultDir, defaultMap)
		}
		if cfg.blacklistPath == "" {
			cfg.blacklistPath = filepath.Join(root, defaultDir, defaultBlacklist)
		}
	}
	for _, p := range []*string{&cfg.mapPath, &cfg.blacklistPath} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
	cfg.log = zerolog.Nop()
	switch cfg.logPath {
	case "":
	case "stderr":
		cfg.log = zerolog.New(os.Stderr).With().Timestamp().Logger()
	default:
		f, err := os.OpenFile(cfg.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open log: %w", err)
		}
		cfg.log = zerolog.New(f).With().Timestamp().Int("pid", os.Getpid()).Logger()
	}
	return cfg, fs.Args(), nil
}

// moduleRoot returns the directory whose .matrix folder holds the default
// map and blacklist: the workspace root when a go.work is in use, otherwise
// the main module's root, otherwise the current directory. cmd/go runs the
// tools in the directory where it was invoked.
func moduleRoot(getenv func(string) string) string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	if w := getenv("GOWORK"); w != "" && w != "off" && filepath.IsAbs(w) {
		return filepath.Dir(w)
	}
	mod := ""
	for dir := wd; ; {
		if getenv("GOWORK") != "off" && exists(filepath.Join(dir, "go.work")) {
			return dir
		}
		if mod == "" && exists(filepath.Join(dir, "go.mod")) {
			mod = dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if mod != "" {
		return mod
	}
	return wd
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
