package killrecord

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// op is one call on a Book: add, remove, cleanup (keep: the desired pods; want: the forgotten),
// result (want: its Verdict), take (want: "go" when the kill goes ahead, "" when refused), known
// (Pod; want: "yes" or ""). Each add gives the pod a new record, which take and known must return. A result or take is for pod, container c, container ID id, of probe type pt
// (Liveness, the zero value, unless set) with result r (Failure unless set).
type op struct {
	do      string
	pod     string
	c       string
	id      string
	pt      messages.ProbeType
	r       *messages.Result
	keep    []string
	want    string
	wantPod []string
}

func change(o op) messages.ResultChanged {
	r := messages.Failure
	if o.r != nil {
		r = *o.r
	}
	return messages.ResultChanged{PodUID: types.UID(o.pod), Container: o.c, ContainerID: messages.ContainerID(o.id),
		Type: o.pt, Result: r}
}

// failed is a Failure's Result and, when it asks for a kill, its Take (the syncLoop with no
// restart budget: the kill is performed at once).
func failed(pod, c, id string, want Verdict) []op {
	ops := []op{{do: "result", pod: pod, c: c, id: id, want: want.String()}}
	if want == Kill {
		ops = append(ops, op{do: "take", pod: pod, c: c, id: id, want: "go"})
	}
	return ops
}

func seq(parts ...any) []op {
	var out []op
	for _, p := range parts {
		switch p := p.(type) {
		case op:
			out = append(out, p)
		case []op:
			out = append(out, p...)
		default:
			panic(fmt.Sprintf("seq: %T", p))
		}
	}
	return out
}

func result(r messages.Result) *messages.Result { return &r }

func TestBook(t *testing.T) {
	add := func(pod string) op { return op{do: "add", pod: pod} }
	tests := map[string][]op{
		"only a Failure asks for a kill": seq(
			add("a"),
			op{do: "result", pod: "a", c: "c", id: "1", r: result(messages.Success), want: "None"},
			op{do: "result", pod: "a", c: "c", id: "1", r: result(messages.Unknown), want: "None"},
			op{do: "result", pod: "ghost", c: "c", id: "1", r: result(messages.Success), want: "None"},
			failed("a", "c", "1", Kill),
		),
		"a container ID is killed once: a liveness and a startup Failure, or a repeat": seq(
			add("a"),
			failed("a", "c", "1", Kill),
			op{do: "result", pod: "a", c: "c", id: "1", pt: messages.Startup, want: "AlreadyKilled"},
			op{do: "result", pod: "a", c: "c", id: "1", want: "AlreadyKilled"},
			op{do: "take", pod: "a", c: "c", id: "1"}, // a second kill of it is refused as well
		),
		"a Result alone records nothing": seq(
			add("a"),
			op{do: "result", pod: "a", c: "c", id: "1", want: "Kill"},
			op{do: "result", pod: "a", c: "c", id: "1", pt: messages.Startup, want: "Kill"},
			op{do: "take", pod: "a", c: "c", id: "1", want: "go"},
		),
		"a new container ID of the same container is killed again; one entry per container": seq(
			add("a"),
			failed("a", "c", "1", Kill),
			failed("a", "c", "2", Kill),
			failed("a", "c", "2", AlreadyKilled),
			// Only the last kill is kept: a late Failure of an older ID asks again (the runtime
			// ignores a container ID that no longer runs).
			failed("a", "c", "1", Kill),
		),
		"containers and pods are apart": seq(
			add("a"), add("b"),
			failed("a", "c", "1", Kill),
			failed("a", "d", "1", Kill), // another container of the pod, with the same ID text
			failed("b", "c", "1", Kill), // the same container name and ID text in another pod
			failed("a", "c", "1", AlreadyKilled),
		),
		"a pod it does not know is ignored, and a kill for it refused": seq(
			add("a"),
			failed("ghost", "c", "1", UnknownPod),
			op{do: "take", pod: "ghost", c: "c", id: "1"},
			op{do: "known", pod: "ghost"},
			add("ghost"),
			op{do: "known", pod: "ghost", want: "yes"},
			failed("ghost", "c", "1", Kill),
		),
		"adding a known pod again keeps its record": seq(
			add("a"),
			failed("a", "c", "1", Kill),
			add("a"),
			failed("a", "c", "1", AlreadyKilled),
		),
		"a removed pod is forgotten with its record": seq(
			add("a"), add("b"),
			failed("a", "c", "1", Kill),
			failed("b", "c", "1", Kill),
			op{do: "remove", pod: "a"},
			op{do: "known", pod: "a"},
			failed("a", "c", "2", UnknownPod),
			op{do: "remove", pod: "a"},     // again: nothing
			op{do: "remove", pod: "ghost"}, // never known: nothing
			failed("b", "c", "1", AlreadyKilled),
			add("a"),
			failed("a", "c", "1", Kill), // added again: no record of the kill before
		),
		"cleanup forgets every pod not desired, with its record": seq(
			add("a"), add("b"), add("c"),
			failed("a", "c", "1", Kill),
			failed("b", "c", "1", Kill),
			op{do: "cleanup", keep: []string{"b", "ghost"}, wantPod: []string{"a", "c"}},
			op{do: "known", pod: "a"},
			op{do: "known", pod: "c"},
			op{do: "known", pod: "ghost"}, // desired is not added
			failed("a", "c", "2", UnknownPod),
			failed("b", "c", "1", AlreadyKilled),
			op{do: "cleanup", keep: []string{"b"}},
			op{do: "cleanup", wantPod: []string{"b"}},
			op{do: "known", pod: "b"},
			add("a"),
			failed("a", "c", "1", Kill),
		),
		"a kill the restart budget held is decided again when it goes through": seq(
			add("a"),
			// Two Failures ask while the budget holds both (the gate queues one per container ID).
			op{do: "result", pod: "a", c: "c", id: "1", want: "Kill"},
			op{do: "result", pod: "a", c: "c", id: "1", pt: messages.Startup, want: "Kill"},
			op{do: "result", pod: "a", c: "d", id: "1", want: "Kill"},
			// The budget lets the first through; a second hand-over of the same ID is refused.
			op{do: "take", pod: "a", c: "c", id: "1", want: "go"},
			op{do: "take", pod: "a", c: "c", id: "1"},
			// The pod is removed before the budget lets the other through: refused, nothing recorded.
			op{do: "remove", pod: "a"},
			op{do: "take", pod: "a", c: "d", id: "1"},
			add("a"),
			failed("a", "d", "1", Kill),
		),
		"a kill held across a cleanup is refused": seq(
			add("a"),
			op{do: "result", pod: "a", c: "c", id: "1", want: "Kill"},
			op{do: "cleanup", wantPod: []string{"a"}},
			op{do: "take", pod: "a", c: "c", id: "1"},
			op{do: "known", pod: "a"},
		),
		"a held kill of an older ID goes through after a newer one was killed": seq(
			add("a"),
			op{do: "result", pod: "a", c: "c", id: "1", want: "Kill"},
			failed("a", "c", "2", Kill),
			// The gate drops a waiting kill when another ID of the container reports; the Book
			// alone keeps only the last ID, so it would let this one through (the runtime ignores it).
			op{do: "take", pod: "a", c: "c", id: "1", want: "go"},
			failed("a", "c", "1", AlreadyKilled),
			failed("a", "c", "2", Kill),
		),
		"an empty container ID reads as killed (no worker publishes one)": seq(
			add("a"),
			failed("a", "c", "", AlreadyKilled),
			op{do: "take", pod: "a", c: "c", id: ""},
		),
	}
	for name, ops := range tests {
		t.Run(name, func(t *testing.T) {
			b := New[string]()
			recs := map[string]string{} // the record each pod was last added with
			for i, o := range ops {
				switch o.do {
				case "add":
					recs[o.pod] = fmt.Sprintf("%s#%d", o.pod, i) // each add a new record
					b.Add(types.UID(o.pod), recs[o.pod])
				case "remove":
					b.Remove(types.UID(o.pod))
				case "cleanup":
					desired := map[types.UID]struct{}{}
					for _, u := range o.keep {
						desired[types.UID(u)] = struct{}{}
					}
					var want []types.UID
					for _, u := range o.wantPod {
						want = append(want, types.UID(u))
					}
					assert.Equal(t, want, b.Cleanup(desired), "op %d: cleanup %v", i, o.keep)
				case "result":
					assert.Equal(t, o.want, b.Result(change(o)).String(), "op %d: result %+v", i, o)
				case "take":
					got := ""
					if rec, ok := b.Take(change(o)); ok {
						got = "go"
						assert.Equal(t, recs[o.pod], rec, "op %d: the kill reads the pod's latest record", i)
					}
					assert.Equal(t, o.want, got, "op %d: take %+v", i, o)
				case "known":
					got := ""
					if rec, ok := b.Pod(types.UID(o.pod)); ok {
						got = "yes"
						assert.Equal(t, recs[o.pod], rec, "op %d: the pod's latest record", i)
					}
					assert.Equal(t, o.want, got, "op %d: known %s", i, o.pod)
				default:
					t.Fatalf("op %d: unknown op %q", i, o.do)
				}
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	assert.Equal(t, "None", None.String())
	assert.Equal(t, "Kill", Kill.String())
	assert.Equal(t, "UnknownPod", UnknownPod.String())
	assert.Equal(t, "AlreadyKilled", AlreadyKilled.String())
	assert.Equal(t, "Verdict(?)", Verdict(200).String())
}
