package upstream

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/probeactor/probeactor/internal/kubectl"
)

// TestLogsContainerIsKubectls: on 3,000 random pods (init, app and ephemeral containers, with and
// without the default-container annotation, naming a container or not, one of theirs or one they
// lack), `node logs`'s choice of container and what it prints on the way (internal/kubectl
// LogsContainer) are kubectl 1.37's own (polymorphichelpers.LogsForObjectFn, which builds the log
// request without sending it and prints its notes on os.Stderr), and --all-containers reads the
// containers kubectl reads.
func TestLogsContainerIsKubectls(t *testing.T) { // not parallel: it captures os.Stderr
	r := rand.New(rand.NewPCG(47, 53))
	for i := range 3000 {
		pod, given := randomLogsPod(r)
		var refs map[v1.ObjectReference]rest.ResponseWrapper
		var theirErr error
		notes := captureStderr(t, func() {
			refs, theirErr = polymorphichelpers.LogsForObjectFn(offlineGetter{}, pod, &v1.PodLogOptions{Container: given}, time.Second, false)
		})
		ours, ourNotes, ourErr := kubectl.LogsContainer(pod, given)
		what := fmt.Sprintf("pod %d: init %v app %v ephemeral %v annotation %q given %q", i,
			containerNames(pod.Spec.InitContainers), containerNames(pod.Spec.Containers), ephemeralNames(pod), pod.Annotations[kubectl.DefaultContainerAnnotation], given)
		if theirErr != nil {
			require.Error(t, ourErr, what)
			assert.Equal(t, theirErr.Error(), ourErr.Error(), what)
		} else {
			require.NoError(t, ourErr, what)
			require.Len(t, refs, 1, what)
			for ref := range refs {
				assert.True(t, strings.HasSuffix(ref.FieldPath, "{"+ours+"}"), "%s: kubectl reads %s, node %s", what, ref.FieldPath, ours)
			}
		}
		want := ""
		for _, n := range ourNotes {
			want += n + "\n"
		}
		assert.Equal(t, notes, want, what)

		refs, err := polymorphichelpers.LogsForObjectFn(offlineGetter{}, pod, &v1.PodLogOptions{}, time.Second, true)
		require.NoError(t, err, what)
		var theirs []string
		for ref := range refs {
			theirs = append(theirs, ref.FieldPath[strings.Index(ref.FieldPath, "{")+1:len(ref.FieldPath)-1])
		}
		all := kubectl.LogsContainers(pod)
		sort.Strings(theirs)
		sorted := append([]string(nil), all...)
		sort.Strings(sorted)
		assert.Equal(t, theirs, sorted, what)
		if t.Failed() {
			t.FailNow()
		}
	}
}

func randomLogsPod(r *rand.Rand) (*v1.Pod, string) {
	pool := []string{"app", "side", "setup", "migrate", "debug", "web", "proxy"}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	next := 0
	take := func() string { next++; return pool[next-1] }
	for range r.IntN(3) {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: take()})
	}
	for range 1 + r.IntN(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: take()})
	}
	for range r.IntN(2) {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: take()}})
	}
	pick := func() string {
		if r.IntN(4) == 0 {
			return "missing"
		}
		return pool[r.IntN(next)]
	}
	if r.IntN(2) == 0 {
		pod.Annotations = map[string]string{kubectl.DefaultContainerAnnotation: pick()}
	}
	given := ""
	if r.IntN(3) == 0 {
		given = pick()
	}
	return pod, given
}

func containerNames(cs []v1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func ephemeralNames(p *v1.Pod) []string {
	var out []string
	for _, c := range p.Spec.EphemeralContainers {
		out = append(out, c.Name)
	}
	return out
}

// captureStderr returns what f writes on os.Stderr.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	rd, wr, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = wr
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(rd); done <- b }()
	func() {
		defer func() { os.Stderr = saved }()
		f()
	}()
	require.NoError(t, wr.Close())
	out := <-done
	require.NoError(t, rd.Close())
	return string(out)
}

// offlineGetter gives kubectl a REST config for a server it never contacts: LogsForObjectFn only
// builds the requests.
type offlineGetter struct{}

func (offlineGetter) ToRESTConfig() (*rest.Config, error) {
	return &rest.Config{Host: "http://127.0.0.1:1"}, nil
}
func (offlineGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return nil, fmt.Errorf("offline")
}
func (offlineGetter) ToRESTMapper() (meta.RESTMapper, error) { return nil, fmt.Errorf("offline") }
func (offlineGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return nil
}

var _ genericclioptions.RESTClientGetter = offlineGetter{}
