package otlp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/net/http2/hpack"
)

// h2 is the OTLP/gRPC sink's client: one unary call at a time over
// HTTP/2 (RFC 9113), on one connection kept alive between calls, in plain
// text with prior knowledge for an http:// endpoint (h2c, as gRPC
// collectors take it) and over TLS with ALPN "h2" for https://. Header
// blocks are coded by golang.org/x/net's HPACK.
//
// It speaks as much HTTP/2 as a client of one stream at a time needs:
// the preface and SETTINGS, HEADERS and CONTINUATION, DATA within the
// peer's flow-control windows (and WINDOW_UPDATE for what it receives),
// PING, RST_STREAM and GOAWAY. net/http's Transport would do it too, but
// linking it puts its connection pool and both HTTP versions' clients in
// every program that links the sink (see h1). Proxies are not used: gRPC
// clients do not take HTTP_PROXY by default either.
type h2 struct {
	tls  *tls.Config
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	conn net.Conn
	br   *bufio.Reader
	key  string // scheme://host:port the connection serves

	enc    *hpack.Encoder
	encBuf bytes.Buffer
	dec    *hpack.Decoder

	nextStream uint32
	// Flow control of what this side sends: the connection's window and
	// the initial window of each new stream (the peer's settings).
	connWindow, initialWindow int64
	maxFrame                  uint32 // the largest frame the peer takes
	goAway                    bool   // the peer is closing the connection
}

// HTTP/2 frame types, flags and settings used here.
const (
	h2Data         = 0x0
	h2Headers      = 0x1
	h2RSTStream    = 0x3
	h2Settings     = 0x4
	h2PushPromise  = 0x5
	h2Ping         = 0x6
	h2GoAway       = 0x7
	h2WindowUpdate = 0x8
	h2Continuation = 0x9

	h2FlagEndStream  = 0x1
	h2FlagAck        = 0x1
	h2FlagEndHeaders = 0x4
	h2FlagPadded     = 0x8
	h2FlagPriority   = 0x20

	h2SettingHeaderTableSize   = 0x1
	h2SettingEnablePush        = 0x2
	h2SettingInitialWindowSize = 0x4
	h2SettingMaxFrameSize      = 0x5

	h2Preface         = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	h2DefaultWindow   = 65535
	h2DefaultMaxFrame = 16384
	// h2MaxRead is the largest frame this side takes (its
	// SETTINGS_MAX_FRAME_SIZE, left at the default).
	h2MaxRead = h2DefaultMaxFrame
	// h2MaxBody bounds the answer's body kept (an OTLP answer is a few
	// bytes); more is read and dropped.
	h2MaxBody = 64 << 10
)

func newH2(cfg *tls.Config) *h2 {
	var d net.Dialer
	return &h2{tls: cfg, dial: d.DialContext}
}

// h2StreamError is a stream the server reset.
type h2StreamError struct{ code uint32 }

func (e h2StreamError) Error() string {
	return fmt.Sprintf("HTTP/2 stream reset by the server (error code %d)", e.code)
}

// do sends req, whose body is read whole, as one stream and returns the
// answer with its headers, trailers and body, read to the end. A call
// that fails leaves no connection behind; the next one dials again.
func (c *h2) do(req *http.Request) (*http.Response, error) {
	resp, err := c.try(req)
	if err != nil {
		c.drop()
		if ctxErr := req.Context().Err(); ctxErr != nil {
			// What failed then is the connection the context cut.
			return nil, ctxErr
		}
		return nil, err
	}
	if c.goAway || c.nextStream > 1<<31-1 {
		c.drop()
	}
	return resp, nil
}

func (c *h2) try(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	if err := c.connect(ctx, req); err != nil {
		return nil, err
	}
	defer bindContext(ctx, c.conn)()

	id := c.nextStream
	c.nextStream += 2
	st := &h2Stream{id: id, window: c.initialWindow}
	if err := c.writeHeaders(id, req, len(body) == 0); err != nil {
		return nil, c.writeFailed(err)
	}
	for len(body) > 0 {
		for min(st.window, c.connWindow) <= 0 {
			if err := c.readFrame(st); err != nil {
				return nil, err
			}
			if st.done {
				// The server answered before taking the whole body.
				return st.response(req), nil
			}
		}
		n := min(int64(len(body)), st.window, c.connWindow, int64(c.maxFrame))
		var flags byte
		if int(n) == len(body) {
			flags = h2FlagEndStream
		}
		if err := c.writeFrame(h2Data, flags, id, body[:n]); err != nil {
			return nil, c.writeFailed(err)
		}
		body = body[n:]
		st.window -= n
		c.connWindow -= n
	}
	for !st.done {
		if err := c.readFrame(st); err != nil {
			return nil, err
		}
	}
	return st.response(req), nil
}

// connect makes c.conn a connection for req's endpoint that has sent its
// preface and settings: the one kept alive, or a new one.
func (c *h2) connect(ctx context.Context, req *http.Request) error {
	key := req.URL.Scheme + "://" + hostPort(req.URL)
	if c.conn != nil && c.key == key {
		return nil
	}
	c.drop()
	conn, err := c.dial(ctx, "tcp", hostPort(req.URL))
	if err != nil {
		return err
	}
	if req.URL.Scheme == "https" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.tls != nil {
			cfg = c.tls.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = req.URL.Hostname()
		}
		cfg.NextProtos = []string{"h2"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			conn.Close()
			return fmt.Errorf("the endpoint does not speak HTTP/2 over TLS (ALPN %q)", p)
		}
		conn = tc
	}
	c.conn, c.br, c.key = conn, bufio.NewReader(conn), key
	c.nextStream = 1
	c.connWindow, c.initialWindow, c.maxFrame, c.goAway = h2DefaultWindow, h2DefaultWindow, h2DefaultMaxFrame, false
	c.encBuf.Reset()
	c.enc = hpack.NewEncoder(&c.encBuf)
	c.dec = hpack.NewDecoder(4096, nil)
	c.dec.SetMaxStringLength(h2MaxBody)
	defer bindContext(ctx, conn)()
	if _, err := io.WriteString(conn, h2Preface); err != nil {
		return err
	}
	// No server push; every other setting at its default.
	return c.writeFrame(h2Settings, 0, 0, []byte{0, h2SettingEnablePush, 0, 0, 0, 0})
}

// writeHeaders sends req's header block on stream id, in a HEADERS frame
// and as many CONTINUATION frames as the peer's frame size needs.
func (c *h2) writeHeaders(id uint32, req *http.Request, endStream bool) error {
	c.encBuf.Reset()
	field := func(name, value string) {
		c.enc.WriteField(hpack.HeaderField{Name: name, Value: value})
	}
	field(":method", req.Method)
	field(":scheme", req.URL.Scheme)
	field(":authority", req.URL.Host)
	field(":path", req.URL.RequestURI())
	for name, values := range req.Header {
		name = strings.ToLower(name)
		switch name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host":
			continue // connection-specific: not sent over HTTP/2
		}
		for _, v := range values {
			field(name, v)
		}
	}
	block := c.encBuf.Bytes()
	typ := byte(h2Headers)
	for {
		n := min(len(block), int(c.maxFrame))
		var flags byte
		if typ == h2Headers && endStream {
			flags |= h2FlagEndStream
		}
		if n == len(block) {
			flags |= h2FlagEndHeaders
		}
		if err := c.writeFrame(typ, flags, id, block[:n]); err != nil {
			return err
		}
		block, typ = block[n:], h2Continuation
		if len(block) == 0 {
			return nil
		}
	}
}

// errHTTP1 is the answer of a server that speaks only HTTP/1.
var errHTTP1 = errors.New("the endpoint answered in HTTP/1, not HTTP/2")

// writeFailed is the error of a failed write: errHTTP1 if the server,
// which then usually closes the connection, answered in HTTP/1.
func (c *h2) writeFailed(err error) error {
	if b, _ := c.br.Peek(len("HTTP/1.")); string(b) == "HTTP/1." {
		return errHTTP1
	}
	return err
}

func (c *h2) writeFrame(typ, flags byte, stream uint32, payload []byte) error {
	var hdr [9]byte
	hdr[0], hdr[1], hdr[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	hdr[3], hdr[4] = typ, flags
	binary.BigEndian.PutUint32(hdr[5:], stream&(1<<31-1))
	if _, err := c.conn.Write(append(hdr[:], payload...)); err != nil {
		return err
	}
	return nil
}

func (c *h2) windowUpdate(stream uint32, n int) error {
	return c.writeFrame(h2WindowUpdate, 0, stream, binary.BigEndian.AppendUint32(nil, uint32(n)))
}

// h2Stream is the answer to one request as its frames arrive.
type h2Stream struct {
	id      uint32
	window  int64 // what this side may still send on it
	status  int
	header  http.Header
	trailer http.Header
	body    bytes.Buffer
	done    bool
	// block collects a header block until its END_HEADERS.
	block     []byte
	blockEnds bool // the block's HEADERS frame ended the stream
	inBlock   bool
}

func (s *h2Stream) response(req *http.Request) *http.Response {
	return &http.Response{
		Status:     strconv.Itoa(s.status) + " " + http.StatusText(s.status),
		StatusCode: s.status,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     s.header,
		Trailer:    s.trailer,
		Body:       io.NopCloser(bytes.NewReader(s.body.Bytes())),
		Request:    req,
	}
}

// readFrame reads and handles one frame from the server.
func (c *h2) readFrame(st *h2Stream) error {
	var hdr [9]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		if bytes.HasPrefix(hdr[:], []byte("HTTP/1.")) {
			return errHTTP1
		}
		return err
	}
	if bytes.HasPrefix(hdr[:], []byte("HTTP/1.")) {
		return errHTTP1
	}
	length := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	typ, flags := hdr[3], hdr[4]
	stream := binary.BigEndian.Uint32(hdr[5:]) & (1<<31 - 1)
	if length > h2MaxRead {
		return fmt.Errorf("HTTP/2 frame of %d bytes, above the %d this client takes", length, h2MaxRead)
	}
	payload := make([]byte, length)
	if _, err := io.ReadFull(c.br, payload); err != nil {
		return err
	}
	if st.inBlock && typ != h2Continuation {
		return errors.New("HTTP/2 protocol error: a header block not continued")
	}
	switch typ {
	case h2Data:
		if stream != st.id {
			return nil
		}
		data, err := unpad(flags, payload)
		if err != nil {
			return err
		}
		if room := h2MaxBody - st.body.Len(); room > 0 {
			st.body.Write(data[:min(len(data), room)])
		}
		if flags&h2FlagEndStream != 0 {
			st.done = true
		}
		if length > 0 {
			// Give the window back for the connection, and for the
			// stream while it is open.
			if err := c.windowUpdate(0, length); err != nil {
				return err
			}
			if !st.done {
				return c.windowUpdate(st.id, length)
			}
		}
	case h2Headers:
		frag, err := unpad(flags, payload)
		if err != nil {
			return err
		}
		if flags&h2FlagPriority != 0 {
			if len(frag) < 5 {
				return errors.New("HTTP/2 protocol error: short HEADERS frame")
			}
			frag = frag[5:]
		}
		st.block = append(st.block[:0], frag...)
		st.blockEnds = flags&h2FlagEndStream != 0
		st.inBlock = flags&h2FlagEndHeaders == 0
		if !st.inBlock {
			return c.endBlock(st, stream)
		}
	case h2Continuation:
		if !st.inBlock {
			return errors.New("HTTP/2 protocol error: CONTINUATION without HEADERS")
		}
		st.block = append(st.block, payload...)
		if len(st.block) > h2MaxBody {
			return errors.New("HTTP/2 header block too large")
		}
		st.inBlock = flags&h2FlagEndHeaders == 0
		if !st.inBlock {
			return c.endBlock(st, stream)
		}
	case h2RSTStream:
		if stream == st.id && len(payload) == 4 {
			return h2StreamError{binary.BigEndian.Uint32(payload)}
		}
	case h2Settings:
		if flags&h2FlagAck != 0 || stream != 0 {
			return nil
		}
		for p := payload; len(p) >= 6; p = p[6:] {
			id, v := binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:])
			switch id {
			case h2SettingHeaderTableSize:
				c.enc.SetMaxDynamicTableSizeLimit(v)
			case h2SettingInitialWindowSize:
				// Open streams' windows move by the change.
				st.window += int64(v) - c.initialWindow
				c.initialWindow = int64(v)
			case h2SettingMaxFrameSize:
				if v >= h2DefaultMaxFrame && v < 1<<24 {
					c.maxFrame = v
				}
			}
		}
		return c.writeFrame(h2Settings, h2FlagAck, 0, nil)
	case h2Ping:
		if flags&h2FlagAck == 0 {
			return c.writeFrame(h2Ping, h2FlagAck, 0, payload)
		}
	case h2GoAway:
		c.goAway = true
		if len(payload) >= 8 {
			last := binary.BigEndian.Uint32(payload) & (1<<31 - 1)
			if st.id > last {
				return fmt.Errorf("the server is closing the HTTP/2 connection (GOAWAY, error code %d) and did not take the call", binary.BigEndian.Uint32(payload[4:]))
			}
		}
	case h2WindowUpdate:
		if len(payload) != 4 {
			return errors.New("HTTP/2 protocol error: bad WINDOW_UPDATE")
		}
		inc := int64(binary.BigEndian.Uint32(payload) & (1<<31 - 1))
		if stream == 0 {
			c.connWindow += inc
		} else if stream == st.id {
			st.window += inc
		}
	case h2PushPromise:
		return errors.New("HTTP/2 protocol error: PUSH_PROMISE, which this client disabled")
	}
	return nil
}

// endBlock decodes a whole header block: the answer's headers, then its
// trailers. Blocks of other streams are decoded too, to keep the
// decoder's table in step, and dropped.
func (c *h2) endBlock(st *h2Stream, stream uint32) error {
	fields, err := c.dec.DecodeFull(st.block)
	if err != nil {
		return fmt.Errorf("HTTP/2 header block: %w", err)
	}
	if stream != st.id {
		return nil
	}
	h := http.Header{}
	for _, f := range fields {
		if f.Name == ":status" {
			st.status, _ = strconv.Atoi(f.Value)
			continue
		}
		if !strings.HasPrefix(f.Name, ":") {
			h.Add(f.Name, f.Value)
		}
	}
	if st.header == nil {
		if st.status < 200 {
			return errors.New("HTTP/2 answer without a final :status")
		}
		st.header = h
	} else {
		st.trailer = h
	}
	if st.blockEnds {
		st.done = true
	}
	return nil
}

// unpad strips a padded frame's padding.
func unpad(flags byte, p []byte) ([]byte, error) {
	if flags&h2FlagPadded == 0 {
		return p, nil
	}
	if len(p) == 0 || int(p[0]) >= len(p) {
		return nil, errors.New("HTTP/2 protocol error: bad padding")
	}
	return p[1 : len(p)-int(p[0])], nil
}

func (c *h2) drop() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.br = nil, nil
	}
}

func (c *h2) close() { c.drop() }
