package workerset

import (
	"slices"
	"sort"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

type fakeWorker struct {
	key messages.ProbeKey
	ms  Membership
}

func (f *fakeWorker) Membership() *Membership     { return &f.ms }
func (f *fakeWorker) ProbeKey() messages.ProbeKey { return f.key }

func key(uid, c string, pt messages.ProbeType) messages.ProbeKey {
	return messages.ProbeKey{PodUID: types.UID(uid), Container: c, Type: pt}
}

// setOp is one call on a Set; want is what it must return, as worker ids (sorted) or keys.
type setOp struct {
	do   string // add, stopPod, stopLS, cleanup, exit, gaveUp, terminated, changedPod, changed, reportedSinceAdd, addHandled
	key  messages.ProbeKey
	uid  string
	keep []string // cleanup: desired pods
	want []string
}

func id(k messages.ProbeKey) string {
	return string(k.PodUID) + "/" + k.Container + "/" + k.Type.String()
}

func TestWorkerSet(t *testing.T) {
	a1, a2 := key("a", "c", messages.Liveness), key("a", "c", messages.Readiness)
	b1 := key("b", "c", messages.Readiness)
	tests := map[string][]setOp{
		"remove a pod: each worker stopped once, the pod reported once without keys": {
			{do: "add", key: a1}, {do: "add", key: a2}, {do: "add", key: b1},
			{do: "changed"}, // adding is what statusManager expected: nothing to report
			{do: "changedPod", uid: "b"},
			{do: "changedPod", uid: "c"}, // a pod none of whose workers could be spawned
			{do: "changed", want: []string{"b:b/c/Readiness", "c:"}},
			{do: "changed"},
			{do: "stopPod", uid: "a", want: []string{id(a1), id(a2)}},
			{do: "stopPod", uid: "a"}, // again: already told
			{do: "exit", key: a1},     // its own exit request too
			{do: "changed"},           // nothing terminated yet
			{do: "terminated", key: a1, want: []string{id(a1)}},
			{do: "terminated", key: a1}, // twice: unknown
			{do: "terminated", key: a2, want: []string{id(a2)}},
			{do: "changed", want: []string{"a:"}},
			{do: "changed"},
		},
		"a report since the last AddPod is remembered until the next AddPod is handled or cleanup": {
			{do: "reportedSinceAdd", uid: "a"},
			{do: "add", key: a1},
			{do: "stopPod", uid: "a", want: []string{id(a1)}},
			{do: "terminated", key: a1, want: []string{id(a1)}},
			{do: "changed", want: []string{"a:"}},
			{do: "reportedSinceAdd", uid: "a", want: []string{"a"}},
			{do: "addHandled", uid: "a"},
			{do: "reportedSinceAdd", uid: "a"},
			{do: "changedPod", uid: "b"},
			{do: "changed", want: []string{"b:"}},
			{do: "cleanup", keep: []string{"a"}},
			{do: "reportedSinceAdd", uid: "b"},
		},
		"stop liveness and startup keeps readiness": {
			{do: "add", key: a1}, {do: "add", key: a2},
			{do: "stopLS", uid: "a", want: []string{id(a1)}},
			{do: "terminated", key: a1, want: []string{id(a1)}},
			{do: "changed", want: []string{"a:a/c/Readiness"}},
		},
		"cleanup stops every pod not desired": {
			{do: "add", key: a1}, {do: "add", key: b1},
			{do: "cleanup", keep: []string{"b"}, want: []string{id(a1)}},
			{do: "cleanup", want: []string{id(b1)}},
			{do: "cleanup"},
		},
		"a worker asking to exit is stopped once": {
			{do: "add", key: a2},
			{do: "exit", key: a2, want: []string{id(a2)}},
			{do: "exit", key: a2},
			{do: "stopPod", uid: "a"},
		},
		"given up: stopped by its supervisor, reported when terminated": {
			{do: "add", key: a1},
			{do: "gaveUp", key: a1},
			{do: "stopPod", uid: "a"},
			{do: "terminated", key: a1, want: []string{id(a1) + " gave up: boom"}},
		},
	}
	for name, ops := range tests {
		t.Run(name, func(t *testing.T) {
			s := New[*fakeWorker]()
			byKey := map[messages.ProbeKey]*fakeWorker{}
			ids := func(ws []*fakeWorker) []string {
				var out []string
				for _, w := range ws {
					out = append(out, id(w.key))
				}
				sort.Strings(out)
				return out
			}
			for i, op := range ops {
				var got []string
				switch op.do {
				case "add":
					_, had := s.Get(op.key)
					assert.False(t, had)
					w := &fakeWorker{key: op.key}
					byKey[op.key] = w
					assert.False(t, s.AddPod(op.key.PodUID, []*fakeWorker{w}, spawnAll))
					got, _ := s.ByName(Name(op.key))
					assert.Same(t, w, got, "a worker is found by its child name")
				case "stopPod":
					got = ids(s.StopWhere(types.UID(op.uid), func(messages.ProbeKey) bool { return true }))
				case "stopLS":
					got = ids(s.StopWhere(types.UID(op.uid), func(k messages.ProbeKey) bool { return k.Type != messages.Readiness }))
				case "cleanup":
					desired := map[types.UID]struct{}{}
					for _, u := range op.keep {
						desired[types.UID(u)] = struct{}{}
					}
					got = ids(s.Cleanup(desired))
				case "exit":
					if s.Stop(byKey[op.key]) {
						got = []string{id(op.key)}
					}
				case "changedPod":
					s.ChangedPod(types.UID(op.uid))
				case "reportedSinceAdd":
					if s.ReportedSinceAdd(types.UID(op.uid)) {
						got = []string{op.uid}
					}
				case "addHandled":
					s.AddHandled(types.UID(op.uid))
				case "gaveUp":
					s.GaveUp(byKey[op.key], "boom")
				case "terminated":
					if g, ok := s.Terminated(Name(op.key)); ok {
						desc := id(g.W.key)
						if g.GaveUp {
							desc += " gave up: " + g.Reason.(string)
						}
						got = []string{desc}
					}
				case "changed":
					for _, pw := range s.Changed() {
						ks := ""
						for j, k := range pw.Keys {
							if j > 0 {
								ks += ","
							}
							ks += id(k)
						}
						got = append(got, string(pw.PodUID)+":"+ks)
					}
					sort.Strings(got)
				default:
					t.Fatalf("unknown op %q", op.do)
				}
				assert.Equal(t, op.want, got, "op %d %s", i, op.do)
			}
		})
	}
}

func pidOf(k messages.ProbeKey) *actor.PID { return actor.NewPID("test", "probeManager/"+Name(k)) }

func spawnAll(w *fakeWorker) *actor.PID { return pidOf(w.key) }

// TestAddPod: which of an AddPod's workers are spawned, and what the set records of them.
func TestAddPod(t *testing.T) {
	a1, a2, a3 := key("a", "c", messages.Liveness), key("a", "c", messages.Readiness), key("a", "d", messages.Startup)
	tests := map[string]struct {
		before  []messages.ProbeKey // added by an earlier AddPod of pod a
		add     []messages.ProbeKey // this AddPod's workers
		fail    []messages.ProbeKey // spawn cannot start these
		spawned []messages.ProbeKey // what spawn is asked to start, in order
		failed  bool
		has     []messages.ProbeKey // the pod's keys afterwards, in order
	}{
		"a new pod: every worker spawned, in order": {
			add: []messages.ProbeKey{a1, a2, a3}, spawned: []messages.ProbeKey{a1, a2, a3},
			has: []messages.ProbeKey{a1, a2, a3},
		},
		"a key with a worker is not spawned again": {
			before: []messages.ProbeKey{a2}, add: []messages.ProbeKey{a1, a2, a3},
			spawned: []messages.ProbeKey{a1, a3}, has: []messages.ProbeKey{a2, a1, a3},
		},
		"every key has a worker: nothing spawned": {
			before: []messages.ProbeKey{a1, a2}, add: []messages.ProbeKey{a2, a1}, has: []messages.ProbeKey{a1, a2},
		},
		"a worker that cannot start is reported and not recorded; the others are": {
			add: []messages.ProbeKey{a1, a2, a3}, fail: []messages.ProbeKey{a2},
			spawned: []messages.ProbeKey{a1, a2, a3}, failed: true, has: []messages.ProbeKey{a1, a3},
		},
		"no worker started: the pod is not entered": {
			add: []messages.ProbeKey{a1}, fail: []messages.ProbeKey{a1},
			spawned: []messages.ProbeKey{a1}, failed: true,
		},
		"no workers": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := New[*fakeWorker]()
			earlier := map[messages.ProbeKey]*fakeWorker{}
			for _, k := range tc.before {
				earlier[k] = &fakeWorker{key: k}
				assert.False(t, s.AddPod(k.PodUID, []*fakeWorker{earlier[k]}, spawnAll))
			}
			var ws []*fakeWorker
			for _, k := range tc.add {
				ws = append(ws, &fakeWorker{key: k})
			}
			var spawned []messages.ProbeKey
			failed := s.AddPod("a", ws, func(w *fakeWorker) *actor.PID {
				spawned = append(spawned, w.key)
				if slices.Contains(tc.fail, w.key) {
					return nil
				}
				return pidOf(w.key)
			})
			assert.Equal(t, tc.spawned, spawned)
			assert.Equal(t, tc.failed, failed)
			assert.Equal(t, len(tc.has), s.Len())
			var has []messages.ProbeKey
			for _, w := range s.Workers("a") {
				has = append(has, w.key)
				if e := earlier[w.key]; e != nil {
					assert.Same(t, e, w, "an earlier AddPod's worker stays the key's")
				} else {
					assert.Equal(t, pidOf(w.key), w.ms.PID, "recorded under the PID spawn returned")
				}
			}
			assert.Equal(t, tc.has, has)
			_, entered := s.pods["a"]
			assert.Equal(t, len(tc.has) > 0, entered, "the pod is in the set exactly when it has workers")
			assert.Empty(t, s.Changed(), "adding is what statusManager expected")
		})
	}
}

func TestNameAndKeyOf(t *testing.T) {
	for _, k := range []messages.ProbeKey{
		key("0b3f9c1e-4d2a-4f6b-9a51-7c2e8d1f0a33", "app", messages.Liveness),
		key("uid.with.dots", "web-1", messages.Readiness),
		key("uid/with/slashes", "c", messages.Startup),
		key("", "c", messages.Liveness), // an empty UID still round-trips
	} {
		name := Name(k)
		got, ok := KeyOf(name)
		assert.True(t, ok, name)
		assert.Equal(t, k, got, name)
	}
	assert.Equal(t, "u.c.liveness", Name(key("u", "c", messages.Liveness)))
	for _, name := range []string{
		"",
		"liveness",
		"u.liveness",         // no container
		"u..liveness",        // an empty container
		"u.c.Liveness",       // type names are lower case
		"u.c.unknown",        // a type Name gives no key
		"u.c.liveness.extra", // the type must be last
	} {
		_, ok := KeyOf(name)
		assert.False(t, ok, "%q is not a worker's name", name)
	}
	assert.Equal(t, "u.c.unknown", Name(key("u", "c", messages.ProbeType(7))))

	s := New[*fakeWorker]()
	_, ok := s.ByName("not a worker")
	assert.False(t, ok)
	_, ok = s.Terminated("u.c.liveness")
	assert.False(t, ok, "a name with no worker")
}
