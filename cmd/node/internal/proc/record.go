package proc

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recordVersion is the format of the pod records this runtime writes and reads.
const recordVersion = 1

// podRecord is what survives node for one pod (<RootDir>/state/<uid>.json): enough to rebuild its
// podState — the decisions already taken (restart counts, the instances and how they ended,
// sidecars started, back-off) — and to reach its live containers (each instance's shim socket).
// The spec is not in it: the next node gets the pod again from its sources and adopts it only if
// the spec's hash is the same.
type podRecord struct {
	Version    int           `json:"version"`
	UID        types.UID     `json:"uid"`
	Namespace  string        `json:"namespace"`
	Name       string        `json:"name"`
	SpecHash   string        `json:"specHash"`
	Grace      time.Duration `json:"gracePeriod"` // the pod's grace period, to stop it unclaimed
	StartTime  time.Time     `json:"startTime"`
	InitFailed bool          `json:"initFailed,omitempty"`
	// RestartingAll: a RestartAllContainers rule is restarting every container (KEP-5532).
	RestartingAll bool `json:"restartingAll,omitempty"`
	// Initialized: initialization completed once (the Initialized condition stays True).
	Initialized bool              `json:"initialized,omitempty"`
	Containers  []containerRecord `json:"containers"`
}

// containerRecord is one container's part of a podRecord.
type containerRecord struct {
	Name              string          `json:"name"`
	Restarts          int32           `json:"restarts"`
	Current           *instanceRecord `json:"current,omitempty"`
	Previous          *instanceRecord `json:"previous,omitempty"`
	Started           bool            `json:"started,omitempty"` // sidecars: the startup probe passed
	ForceRestart      bool            `json:"forceRestart,omitempty"`
	Backoff           time.Duration   `json:"backoff,omitempty"`
	BackoffLastUpdate time.Time       `json:"backoffLastUpdate,omitzero"`
	BackoffUntil      time.Time       `json:"backoffUntil,omitzero"`
	BackoffShown      time.Time       `json:"backoffShown,omitzero"`
	// Socket is the shim's socket of the current instance, while it may run.
	Socket string `json:"socket,omitempty"`
	// Ready and StartupPassed are the latest readiness and startup results node reported for the
	// current instance (ProbeResult): an adopted instance is reported so at once (KEP-4781).
	Ready         bool `json:"ready,omitempty"`
	StartupPassed bool `json:"startupPassed,omitempty"`
	// ResetForAll: removed by a RestartAllContainers restart, waiting to start again.
	ResetForAll bool `json:"resetForAll,omitempty"`
}

// instanceRecord is one instance of a container.
type instanceRecord struct {
	ID         string    `json:"id"`
	StartedAt  time.Time `json:"startedAt"`
	Exited     bool      `json:"exited,omitempty"`
	ExitCode   int32     `json:"exitCode,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// specHash is the sha256 of pod.Spec's JSON (encoding/json writes fields in a fixed order and map
// keys sorted, so the same spec always hashes the same).
func specHash(pod *v1.Pod) string {
	b, _ := json.Marshal(pod.Spec) // a v1.PodSpec always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// snapshot is the record of p; sockets gives the shim socket of each running instance by ID.
func snapshot(p *podState, grace time.Duration, sockets map[string]string) podRecord {
	rec := podRecord{
		Version: recordVersion, UID: p.pod.UID, Namespace: p.pod.Namespace, Name: p.pod.Name,
		SpecHash: specHash(p.pod), Grace: grace, StartTime: p.startTime, InitFailed: p.initFailed, RestartingAll: p.restartingAll,
		Initialized: p.initialized,
	}
	for _, c := range p.containers {
		cr := containerRecord{
			Name: c.spec.Name, Restarts: c.restarts, Current: instanceToRecord(c.current), Previous: instanceToRecord(c.previous),
			Started: c.started, ForceRestart: c.forceRestart,
			Backoff: c.backoff.current, BackoffLastUpdate: c.backoff.lastUpdate, BackoffUntil: c.backoffUntil, BackoffShown: c.backoffShown,
			Ready: c.probed.Ready, StartupPassed: c.probed.Started, ResetForAll: c.resetForAll,
		}
		if c.running() {
			cr.Socket = sockets[c.current.id]
		}
		rec.Containers = append(rec.Containers, cr)
	}
	return rec
}

// restore rebuilds the podState of pod from its record. The record must be of this pod (UID) and
// spec (hash); a running instance in it is reported with the recorded readiness and startup.
func restore(pod *v1.Pod, rec podRecord, initialBackoff, maxBackoff time.Duration) (*podState, error) {
	if err := rec.check(); err != nil {
		return nil, err
	}
	if rec.UID != pod.UID {
		return nil, fmt.Errorf("record of pod %s, not %s", rec.UID, pod.UID)
	}
	if rec.SpecHash != specHash(pod) {
		return nil, errors.New("record of another spec")
	}
	p := newPodState(pod, rec.StartTime, initialBackoff, maxBackoff)
	p.initFailed = rec.InitFailed
	p.restartingAll = rec.RestartingAll
	p.initialized = rec.Initialized
	for _, cr := range rec.Containers {
		c, ok := p.byName[cr.Name]
		if !ok {
			return nil, fmt.Errorf("record has container %q, the spec has not", cr.Name)
		}
		c.restarts, c.current, c.previous = cr.Restarts, instanceFromRecord(cr.Current), instanceFromRecord(cr.Previous)
		c.started, c.forceRestart = cr.Started, cr.ForceRestart
		c.backoff.current, c.backoff.lastUpdate = cr.Backoff, cr.BackoffLastUpdate
		c.backoffUntil, c.backoffShown = cr.BackoffUntil, cr.BackoffShown
		c.resetForAll = cr.ResetForAll
		c.probed = probeOutcome{Ready: cr.Ready, Started: cr.StartupPassed}
		if c.running() {
			c.adopted, c.wasAdopted = c.probed, true
		}
	}
	return p, nil
}

// check rejects what no runtime could have written.
func (rec *podRecord) check() error {
	switch {
	case rec.Version != recordVersion:
		return fmt.Errorf("format version %d, want %d", rec.Version, recordVersion)
	case rec.UID == "":
		return errors.New("no pod UID")
	case rec.SpecHash == "":
		return errors.New("no spec hash")
	}
	for _, c := range rec.Containers {
		if c.Current != nil && !c.Current.Exited && c.Socket == "" {
			return fmt.Errorf("container %q runs with no shim socket", c.Name)
		}
	}
	return nil
}

func instanceToRecord(in *instance) *instanceRecord {
	if in == nil {
		return nil
	}
	return &instanceRecord{ID: in.id, StartedAt: in.startedAt, Exited: in.exited,
		ExitCode: in.exit.Code, Reason: in.exit.Reason, Message: in.exit.Message, FinishedAt: in.exit.FinishedAt}
}

func instanceFromRecord(r *instanceRecord) *instance {
	if r == nil {
		return nil
	}
	return &instance{id: r.ID, startedAt: r.StartedAt, exited: r.Exited,
		exit: exitStatus{Code: r.ExitCode, Reason: r.Reason, Message: r.Message, FinishedAt: r.FinishedAt}}
}

// recordPath is where pod uid's record lives under dir (<RootDir>/state).
func recordPath(dir string, uid types.UID) string { return filepath.Join(dir, string(uid)+".json") }

// tempPrefix starts the name of a record being written; a leftover is a write node did not finish.
const tempPrefix = ".tmp-"

// writeFileAtomic replaces path with data so that a reader (the next node, after any crash) finds
// the old content or the new, never a part: write a temporary file in the same directory, fsync
// it, rename it over path, fsync the directory.
func writeFileAtomic(path string, data []byte) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, tempPrefix+base+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// badRecord is a record file that could not be used, and why.
type badRecord struct {
	path string
	err  error
}

// loadRecords reads every record in dir. Leftover temporary files (writes that never finished;
// the record they were to replace is still whole) are removed. A missing dir holds no records.
func loadRecords(dir string) ([]podRecord, []badRecord, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read pod records: %w", err)
	}
	var good []podRecord
	var bad []badRecord
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), tempPrefix) {
			_ = os.Remove(path)
			continue
		}
		rec, err := readRecord(path)
		if err != nil {
			bad = append(bad, badRecord{path: path, err: err})
			continue
		}
		good = append(good, rec)
	}
	return good, bad, nil
}

func readRecord(path string) (podRecord, error) {
	var rec podRecord
	if !strings.HasSuffix(path, ".json") {
		return rec, errors.New("not a pod record (no .json)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("decode: %w", err)
	}
	if err := rec.check(); err != nil {
		return rec, err
	}
	if want := string(rec.UID) + ".json"; filepath.Base(path) != want {
		return rec, fmt.Errorf("record of pod %s in a file not named %s", rec.UID, want)
	}
	return rec, nil
}
