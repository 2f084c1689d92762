package tracer

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// Plugin is a monitor with a lifecycle, Matrix's Plugin. Init runs once,
// when the Matrix is built; Start and Stop may alternate any number of
// times; Tag names the plugin (TracePluginTag for the TracePlugin).
type Plugin interface {
	// Init prepares the plugin (checks its configuration).
	Init() error
	// Start starts monitoring.
	Start() error
	// Stop stops monitoring and waits for the plugin's goroutines.
	Stop()
	// Tag names the plugin; tags are unique within a Matrix.
	Tag() string
}

// ListenerAdder is implemented by plugins that report issues: Build hands
// them the builder's listeners.
type ListenerAdder interface {
	// AddListener adds a listener for every later issue.
	AddListener(l Listener)
}

// Builder assembles a Matrix, Matrix.Builder.
type Builder struct {
	plugins   []Plugin
	listeners []Listener
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{} }

// Plugin adds a plugin.
func (b *Builder) Plugin(p Plugin) *Builder {
	b.plugins = append(b.plugins, p)
	return b
}

// Listener adds a listener that receives the issues of every plugin that
// reports issues (ListenerAdder). Without one, Build uses
// NewJSONListener(os.Stderr), like Matrix's default listener that logs
// each issue.
func (b *Builder) Listener(l Listener) *Builder {
	b.listeners = append(b.listeners, l)
	return b
}

// Build checks the plugins (non-nil, tags unique), gives them the
// listeners, and initialises each (Plugin.Init).
func (b *Builder) Build() (*Matrix, error) {
	m := &Matrix{byTag: map[string]Plugin{}}
	listeners := b.listeners
	if len(listeners) == 0 {
		listeners = []Listener{NewJSONListener(os.Stderr)}
	}
	for _, l := range listeners {
		if l == nil {
			return nil, errors.New("matrix: nil listener")
		}
	}
	for i, p := range b.plugins {
		if p == nil {
			return nil, fmt.Errorf("matrix: plugin %d is nil", i)
		}
		tag := p.Tag()
		if _, dup := m.byTag[tag]; dup {
			return nil, fmt.Errorf("matrix: two plugins with tag %q", tag)
		}
		m.byTag[tag] = p
		m.plugins = append(m.plugins, p)
	}
	for _, p := range m.plugins {
		if la, ok := p.(ListenerAdder); ok {
			for _, l := range listeners {
				la.AddListener(l)
			}
		}
		if err := p.Init(); err != nil {
			return nil, fmt.Errorf("matrix: init plugin %q: %w", p.Tag(), err)
		}
	}
	return m, nil
}

// Matrix holds the plugins, Matrix's Matrix.
type Matrix struct {
	mu      sync.Mutex
	plugins []Plugin
	byTag   map[string]Plugin
}

// StartAllPlugins starts every plugin in the order they were added. If one
// fails to start, the ones already started are stopped again and the error
// names the plugin. In a binary not built with -toolexec=matrixexec the
// TracePlugin fails with an error wrapping beat.ErrNotInstrumented.
func (m *Matrix) StartAllPlugins() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, p := range m.plugins {
		if err := p.Start(); err != nil {
			for j := i - 1; j >= 0; j-- {
				m.plugins[j].Stop()
			}
			return fmt.Errorf("matrix: start plugin %q: %w", p.Tag(), err)
		}
	}
	return nil
}

// StopAllPlugins stops every plugin, in the reverse order.
func (m *Matrix) StopAllPlugins() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.plugins) - 1; i >= 0; i-- {
		m.plugins[i].Stop()
	}
}

// Plugin returns the plugin with the given tag, or nil.
func (m *Matrix) Plugin(tag string) Plugin {
	return m.byTag[tag]
}

// Plugins returns the plugins in the order they were added.
func (m *Matrix) Plugins() []Plugin {
	return append([]Plugin(nil), m.plugins...)
}
