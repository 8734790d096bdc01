package cluster

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// protoVersion is the scheduler/worker protocol version; both ends must agree.
const protoVersion = 5

// The wire protocol: after TCP connect (and TLS) both sides prove they know the shared token
// (auth.go), then the worker sends a hello frame; the scheduler answers welcome or refused. Then both sides exchange frames: one gob
// stream per direction (gob frames each message with its length), written under a mutex.

// frame is one protocol message; Op says which fields matter.
type frame struct {
	Op     string // hello welcome refused task done erred get data release cancel steal stolen stats close
	Hello  *hello
	Task   *taskMsg
	Key    string
	Keys   []string
	ReqID  uint64
	Blob   *blob
	Size   int64
	Type   string
	Err    string
	Trace  string
	Stats  *workerStats
	Reason string
	// Fallback, on a done frame of a kept chunk, says why a GPU worker computed it on its CPU.
	Fallback string
	// Moved, on a done frame, gives the tier each result entered since the worker last said
	// (the task's own, and what its result pushed down), as workerStats.Moved does.
	Moved map[string]string
	// Start and Stop bound a task's run on its worker (unix nanoseconds, the worker's clock);
	// FetchBytes and FetchNanos are the inputs it fetched from peers and how long that took.
	Start, Stop            int64
	FetchBytes, FetchNanos int64
	// ShuffleSent and ShuffleReceived, on a done frame of a shuffle task, are the worker's
	// shuffle byte counters, so they are current in WorkerInfo once the shuffle returns.
	ShuffleSent, ShuffleReceived int64
	// HeldPeak, on a done frame, is the worker's store peak (storeStats.Peak), current in
	// WorkerInfo once the task's caller sees it done.
	HeldPeak uint64
	// Client protocol.
	Submit    []clientTask
	State     string
	Workers   []WorkerInfo
	Dashboard string
	Address   string
	// Ctl is a control request (op "ctl", answered by "ctlr" with CtlReply): sizing, data
	// placement, runs on workers, coordination primitives (control.go).
	Ctl      *ctlMsg
	CtlReply *ctlReply
}

// clientTask is a task submitted by a remote client (Connect).
type clientTask struct {
	Key        string
	Spec       taskSpec
	Deps       []string
	Restrict   []string
	Resources  map[string]float64
	MaxRetries int
	Priority   int
	Home       string // the worker to run it on while connected (task.home)
}

// hello introduces a worker (or, with Role "client", a remote client) to the scheduler.
type hello struct {
	Version           int
	Role              string // "" or "worker": a worker; "client": a client of Connect
	DataAddr          string // where the worker serves its results to peers ("host:port")
	Name              string
	PID               int
	Host              string
	NThreads          int
	MemoryLimit       uint64
	DeviceMemoryLimit uint64
	GPU               string // UUID of the GPU or MIG instance, "" for a CPU worker
	GPUName           string
	GPULabel          string
	Resources         map[string]float64
}

// taskMsg is a task sent to a worker, with the data of dependencies it does not hold.
type taskMsg struct {
	Key  string
	Spec taskSpec
	Deps map[string]*blob
	// Who maps inputs held on other workers to those workers' data addresses: the worker
	// fetches them from its peers directly, not through the scheduler.
	Who map[string]string
}

// taskSpec is what to run: a shipped function ("call"), a planned array chunk ("chunk"), or a
// scattered value ("value", in Args[0]).
type taskSpec struct {
	Kind   string // "call", "chunk" or "value"
	Source string // call: Go source that declares Func and what it uses
	Func   string // call: the function's name
	Args   []arg  // call: arguments
	Chunk  []byte // chunk: the encoded gpuarray task
	Inputs []string
	// Keep marks a persisted chunk (chunk): a GPU worker keeps its result in device memory.
	Keep bool
}

// arg is one argument: a value, or a reference to another task's result.
type arg struct {
	Ref string
	Val *blob
}

// workerStats is a worker's periodic report.
type workerStats struct {
	RSS     uint64
	Stored  uint64 // bytes of results held in memory
	Spilled uint64 // bytes of results spilled to disk
	Device  uint64 // bytes of results a GPU worker holds in device memory
	// Moved gives the tier ("device", "host", "disk") each result entered since the last
	// report: where a persisted chunk is, for the array's repr.
	Moved        map[string]string
	Processing   int
	InMemory     int
	GPUMemUsed   uint64
	GPUMemTotal  uint64
	GPUUtil      int
	TasksDone    int64
	TasksErred   int64
	Goroutines   int
	UptimeMillis int64
	// ShuffleSent and ShuffleReceived count the bytes of shuffle shards pushed to peers and
	// stored from them since the worker started.
	ShuffleSent, ShuffleReceived int64
	// HeldPeak is the most host memory its store's results and the tasks' buffers in flight
	// took at once (storeStats.Peak).
	HeldPeak uint64
}

// blob is one encoded value: a kept chunk raw (encChunk), gob when its type is registered,
// JSON otherwise.
type blob struct {
	Enc  byte // encChunk, encGob or encJSON
	Data []byte
}

const (
	encGob  = 1
	encJSON = 2
)

type gobBox struct{ V any }

func init() {
	for _, v := range []any{
		int(0), int8(0), int16(0), int32(0), int64(0), uint(0), uint8(0), uint16(0), uint32(0), uint64(0),
		float32(0), float64(0), complex64(0), complex128(0), "", false,
		[]int{}, []int64{}, []int32{}, []float64{}, []float32{}, []string{}, []byte{}, []bool{}, []any{},
		[][]float64{}, [][]int{}, map[string]any{}, map[string]int{}, map[string]float64{},
		map[string]string{}, map[int]int{}, map[int]float64{}, time.Time{}, time.Duration(0),
	} {
		gob.Register(v)
	}
}

// encodeValue encodes v for the wire.
func encodeValue(v any) (*blob, error) {
	if o, ok := soleChunk(v); ok {
		return encodeChunk(o), nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(gobBox{V: v}); err == nil {
		return &blob{Enc: encGob, Data: buf.Bytes()}, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode value of type %T: %w", v, err)
	}
	return &blob{Enc: encJSON, Data: data}, nil
}

// decodeValue decodes a blob. JSON-encoded values come back as maps, slices, float64s and
// strings.
func decodeValue(b *blob) (any, error) { return decodeBlob(b, false) }

// decodeShared is decodeValue reading a kept chunk's values in place in b's memory, when the
// caller owns b (read from disk or a peer) or only reads the values while it runs.
func decodeShared(b *blob) (any, error) { return decodeBlob(b, true) }

func decodeBlob(b *blob, shared bool) (any, error) {
	if b == nil {
		return nil, nil
	}
	switch b.Enc {
	case encChunk:
		return decodeChunk(b, shared)
	case encGob:
		var box gobBox
		if err := gob.NewDecoder(bytes.NewReader(b.Data)).Decode(&box); err != nil {
			return nil, fmt.Errorf("decode value: %w", err)
		}
		return box.V, nil
	case encJSON:
		var v any
		if err := json.Unmarshal(b.Data, &v); err != nil {
			return nil, fmt.Errorf("decode value: %w", err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("decode value: unknown encoding %d", b.Enc)
}

// link is one framed connection.
type link struct {
	c   net.Conn
	bw  *bufio.Writer
	enc *gob.Encoder
	dec *gob.Decoder
	wmu sync.Mutex
}

func newLink(c net.Conn) *link {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	bw := bufio.NewWriterSize(c, 64<<10)
	return &link{c: c, bw: bw, enc: gob.NewEncoder(bw), dec: gob.NewDecoder(bufio.NewReaderSize(c, 64<<10))}
}

func (l *link) send(f *frame) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.enc.Encode(f); err != nil {
		return fmt.Errorf("send %s: %w", f.Op, err)
	}
	if err := l.bw.Flush(); err != nil {
		return fmt.Errorf("send %s: %w", f.Op, err)
	}
	return nil
}

func (l *link) recv() (*frame, error) {
	var f frame
	if err := l.dec.Decode(&f); err != nil {
		return nil, err
	}
	return &f, nil
}

func (l *link) close() error { return l.c.Close() }
