package staticpod

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// podYAML is a valid pod manifest; extra is appended under the container (e.g. a probe).
func podYAML(name, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: app
    command: [sleep, infinity]
%s`, name, extra)
}

func file(path, content string) File { return File{Path: path, Data: []byte(content)} }

const testURL = "http://config.example/pods.yaml"

// urlFile is the URL source's answer with content.
func urlFile(content string) *File { f := file(testURL, content); return &f }

// summary is a plan as "start web (added)", "stop web (removed)" lines, then its problems.
func summary(p Plan) []string {
	var out []string
	for _, a := range p.Stop {
		out = append(out, fmt.Sprintf("stop %s (%s)", a.Pod.Name, a.Why))
	}
	for _, a := range p.Start {
		out = append(out, fmt.Sprintf("start %s (%s)", a.Pod.Name, a.Why))
	}
	return append(out, p.Problems...)
}

// step is one input to the core and the plan it must give.
type step struct {
	scan    []File      // a Scan with these files (nil and no other input: an empty directory)
	stopped string      // or: Stopped for the instance of this pod name stopped by an earlier step
	listErr error       // or: ListFailed
	url     *File       // or: ScanURL with this answer
	want    []string    // summary of the plan
	running []string    // names Running returns afterwards (nil: not checked)
	check   func(*Core) // optional extra assertions
	reserve []*v1.Pod   // only in the first step: NewCore's reserved pods
}

func TestCore(t *testing.T) {
	web := podYAML("web", "")
	web2 := podYAML("web", "    workingDir: /tmp\n")
	webComment := "# a comment changes nothing\n" + web
	fixedUID := func(name, uid, extra string) string {
		return strings.Replace(podYAML(name, extra), "metadata: {name: "+name+"}", "metadata: {name: "+name+", uid: "+uid+"}", 1)
	}
	invalid := podYAML("web", "    livenessProbe:\n      exec: {command: [\"true\"]}\n      periodSecond: 5\n")
	invalidRule := podYAML("web", "    readinessProbe:\n      tcpSocket: {port: 80}\n      terminationGracePeriodSeconds: 3\n")
	fromF := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "f-uid"}}

	cases := []struct {
		name  string
		steps []step
	}{
		{"a new file starts its pod, an unchanged one nothing", []step{
			{scan: []File{file("d/web.yaml", web)}, want: []string{"start web (added)"}, running: []string{"web"}},
			{scan: []File{file("d/web.yaml", web)}, want: nil, running: []string{"web"}},
			{scan: []File{file("d/web.yaml", webComment)}, want: nil, running: []string{"web"}},
		}},
		{"a removed file stops its pod", []step{
			{scan: []File{file("d/web.yaml", web)}, want: []string{"start web (added)"}},
			{scan: nil, want: []string{"stop web (removed)"}, running: []string{}},
			{scan: nil, want: nil},
			{stopped: "web", want: nil, running: []string{}},
		}},
		{"a changed pod is stopped, and its replacement starts once it is gone", []step{
			{scan: []File{file("d/web.yaml", web)}, want: []string{"start web (added)"}},
			{scan: []File{file("d/web.yaml", web2)}, want: []string{"stop web (changed)"}, running: []string{}},
			{scan: []File{file("d/web.yaml", web2)}, want: nil, running: []string{}},
			{stopped: "web", want: []string{"start web (changed)"}, running: []string{"web"}},
			{scan: []File{file("d/web.yaml", web2)}, want: nil},
		}},
		{"an invalid new file is reported with its field path once, and starts nothing", []step{
			{scan: []File{file("d/a.yaml", podYAML("a", "")), file("d/web.yaml", invalid)}, want: []string{
				"start a (added)",
				"d/web.yaml: spec.containers[0].livenessProbe.periodSecond: unknown field",
			}},
			{scan: []File{file("d/a.yaml", podYAML("a", "")), file("d/web.yaml", invalid)}, want: nil, running: []string{"a"}},
			{scan: []File{file("d/a.yaml", podYAML("a", "")), file("d/web.yaml", invalidRule)}, want: []string{
				"d/web.yaml: spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 3: must not be set for readinessProbes",
			}},
			{scan: []File{file("d/a.yaml", podYAML("a", "")), file("d/web.yaml", web)}, want: []string{"start web (added)"}, running: []string{"a", "web"}},
			{scan: []File{file("d/a.yaml", podYAML("a", "")), file("d/web.yaml", invalid)}, want: []string{
				"d/web.yaml: spec.containers[0].livenessProbe.periodSecond: unknown field",
				"d/web.yaml: not applied; the pods of its last valid version keep running",
			}, running: []string{"a", "web"}},
		}},
		{"a running pod's file that becomes unreadable or empty keeps the pod", []step{
			{scan: []File{file("d/web.yaml", web)}, want: []string{"start web (added)"}},
			{scan: []File{{Path: "d/web.yaml", Err: errors.New("permission denied")}}, want: []string{
				"d/web.yaml: permission denied",
				"d/web.yaml: not applied; the pods of its last valid version keep running",
			}, running: []string{"web"}},
			{scan: []File{file("d/web.yaml", web)}, want: nil, running: []string{"web"}},
			{scan: []File{file("d/web.yaml", "")}, want: []string{
				"d/web.yaml: no pods found (delete the file to stop its pods)",
				"d/web.yaml: not applied; the pods of its last valid version keep running",
			}, running: []string{"web"}},
		}},
		{"a directory that cannot be listed changes nothing", []step{
			{scan: []File{file("d/web.yaml", web)}, want: []string{"start web (added)"}},
			{listErr: errors.New("open d: permission denied"), want: []string{"open d: permission denied"}, running: []string{"web"}},
			{listErr: errors.New("open d: permission denied"), want: nil, running: []string{"web"}},
			{scan: []File{file("d/web.yaml", web)}, want: nil, running: []string{"web"}},
		}},
		{"the first file in name order gets a name; the running pod keeps it", []step{
			{scan: []File{file("d/b.yaml", web)}, want: []string{"start web (added)"}},
			{scan: []File{file("d/a.yaml", web2), file("d/b.yaml", web)}, want: []string{
				`d/a.yaml: metadata.name: Duplicate value: pod "default/web" is also defined in d/b.yaml`,
			}, running: []string{"web"}, check: func(c *Core) {
				assert.Equal(t, "d/b.yaml", c.running["default/web"].origin)
			}},
			{scan: []File{file("d/a.yaml", web2)}, want: []string{"stop web (changed)"}},
			{stopped: "web", want: []string{"start web (changed)"}, check: func(c *Core) {
				assert.Equal(t, "d/a.yaml", c.running["default/web"].origin)
			}},
		}},
		{"names and UIDs of -f pods are refused", []step{
			{reserve: []*v1.Pod{fromF}, scan: []File{
				file("d/a.yaml", podYAML("api", "")),
				file("d/b.yaml", fixedUID("other", "f-uid", "")),
			}, want: []string{
				`d/a.yaml: metadata.name: Duplicate value: pod "default/api" is also run from -f`,
				`d/b.yaml: metadata.uid: Duplicate value: "f-uid" is also the UID of a pod run from -f`,
			}, running: []string{}},
		}},
		{"a pod with a fixed UID is replaced only after its old instance stopped", []step{
			{scan: []File{file("d/web.yaml", fixedUID("web", "u1", ""))}, want: []string{"start web (added)"}},
			{scan: []File{file("d/web.yaml", fixedUID("web", "u1", "    workingDir: /tmp\n"))}, want: []string{"stop web (changed)"}},
			{stopped: "web", want: []string{"start web (changed)"}, check: func(c *Core) {
				assert.Equal(t, types.UID("u1"), c.running["default/web"].pod.UID)
			}},
		}},
		{"a renamed pod with a fixed UID waits for the old name to stop", []step{
			{scan: []File{file("d/web.yaml", fixedUID("web", "u1", ""))}, want: []string{"start web (added)"}},
			{scan: []File{file("d/web.yaml", fixedUID("www", "u1", ""))}, want: []string{"stop web (removed)"}, running: []string{}},
			{stopped: "web", want: []string{"start www (added)"}, running: []string{"www"}},
		}},
		{"a file of several pods: each is added and removed on its own", []step{
			{scan: []File{file("d/pods.yaml", podYAML("a", "")+"---\n"+podYAML("b", ""))}, want: []string{"start a (added)", "start b (added)"}},
			{scan: []File{file("d/pods.yaml", podYAML("a", ""))}, want: []string{"stop b (removed)"}, running: []string{"a"}},
			{scan: []File{file("d/pods.yaml", podYAML("a", "")+"---\n"+podYAML("b", ""))}, want: nil, running: []string{"a"}},
			{stopped: "b", want: []string{"start b (added)"}, running: []string{"a", "b"}},
		}},
		{"the URL's pods start, change and stop with an empty List; an answer that cannot be read, or an empty one, changes nothing", []step{
			{url: urlFile(web), want: []string{"start web (added)"}, running: []string{"web"}},
			{url: urlFile(web), want: nil},
			{url: &File{Path: testURL, Err: errors.New("unable to read the URL: the server reported 404 Not Found")}, want: []string{
				testURL + ": unable to read the URL: the server reported 404 Not Found",
				testURL + ": not applied; the pods of its last valid version keep running",
			}, running: []string{"web"}},
			{url: &File{Path: testURL, Err: errors.New("unable to read the URL: the server reported 404 Not Found")}, want: nil,
				check: func(c *Core) { assert.Equal(t, 1, c.Problems(), "one source, however many lines it logs") }},
			{url: urlFile(invalid), want: []string{ // "not applied" is still the case: said once
				testURL + ": spec.containers[0].livenessProbe.periodSecond: unknown field",
			}, running: []string{"web"}},
			{url: urlFile(web2), want: []string{"stop web (changed)"}},
			{stopped: "web", want: []string{"start web (changed)"}, running: []string{"web"}},
			{url: urlFile("# a file being rewritten\n"), want: []string{
				testURL + ": no pods found (serve an empty List to stop its pods)",
				testURL + ": not applied; the pods of its last valid version keep running",
			}, running: []string{"web"}},
			{url: urlFile("apiVersion: v1\nkind: List\nitems: []\n"), want: []string{"stop web (removed)"}, running: []string{}},
			{url: urlFile("apiVersion: v1\nkind: PodList\nitems: []\n"), want: nil},
		}},
		{"the path's files and the URL are one set of static pods", []step{
			{scan: []File{file("d/a.yaml", podYAML("a", ""))}, want: []string{"start a (added)"}},
			{url: urlFile(podYAML("b", "")), want: []string{"start b (added)"}, running: []string{"a", "b"}},
			{scan: nil, want: []string{"stop a (removed)"}, running: []string{"b"}},
			{listErr: errors.New("open d: permission denied"), want: []string{"open d: permission denied"}, running: []string{"b"},
				check: func(c *Core) { assert.Equal(t, 1, c.Problems(), "the path that cannot be listed") }},
			{url: urlFile("apiVersion: v1\nkind: List\nitems: []\n"), want: []string{"stop b (removed)"}, running: []string{}},
		}},
		{"a pod both the path and the URL define: the one running stays, the other is refused", []step{
			{scan: []File{file("d/web.yaml", web)}, want: []string{"start web (added)"}},
			{url: urlFile(web2), want: []string{
				testURL + `: metadata.name: Duplicate value: pod "default/web" is also defined in d/web.yaml`,
			}, running: []string{"web"}, check: func(c *Core) { assert.Equal(t, 1, c.Problems(), "one pod refused") }},
			{scan: nil, want: []string{"stop web (changed)"}}, // the URL's web is what should run now
			{stopped: "web", want: []string{"start web (changed)"}, running: []string{"web"},
				check: func(c *Core) { assert.Equal(t, testURL, c.running["default/web"].origin) }},
		}},
		{"two pods of one file with one name: both origins named", []step{
			{scan: []File{file("d/pods.yaml", web+"---\n"+web2)}, want: []string{
				"start web (added)",
				`d/pods.yaml: document 2: metadata.name: Duplicate value: pod "default/web" is also defined in d/pods.yaml: document 1`,
			}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore(tc.steps[0].reserve, "-f")
			started := map[string]types.UID{} // last started UID per name
			for i, s := range tc.steps {
				var p Plan
				switch {
				case s.listErr != nil:
					p = c.ListFailed(s.listErr)
				case s.url != nil:
					p = c.ScanURL(*s.url, t0.Add(time.Duration(i)*time.Second))
				case s.stopped != "":
					uid, ok := started[s.stopped]
					require.True(t, ok, "step %d: %s was never started", i, s.stopped)
					p = c.Stopped(uid)
				default:
					p = c.Scan(s.scan, t0.Add(time.Duration(i)*time.Second))
				}
				for _, a := range p.Start {
					started[a.Pod.Name] = a.Pod.UID
				}
				assert.Equal(t, s.want, summary(p), "step %d", i)
				if s.running != nil {
					var names []string
					for _, pod := range c.Running() {
						names = append(names, pod.Name)
					}
					assert.ElementsMatch(t, s.running, names, "step %d: running", i)
				}
				if s.check != nil {
					s.check(c)
				}
			}
		})
	}
}

// TestStartFailedIsRetriedAtTheNextScan: a pod that could not start is forgotten and started again
// by the next scan.
func TestStartFailedIsRetriedAtTheNextScan(t *testing.T) {
	c := NewCore(nil, "-f")
	files := []File{file("d/web.yaml", podYAML("web", ""))}
	p := c.Scan(files, t0)
	require.Len(t, p.Start, 1)
	c.StartFailed(p.Start[0].Pod.UID)
	assert.Empty(t, c.Running())
	assert.Equal(t, []string{"start web (added)"}, summary(c.Scan(files, t0)))
}

// TestUIDsAreDerivedFromPathAndContent: as kubelet, a pod without metadata.uid gets a UID that is
// the same for the same file and content (also after a restart of node), and different when the
// path or the content differs; defaults and validation are the ones -f gets.
func TestUIDsAreDerivedFromPathAndContent(t *testing.T) {
	uid := func(path, content string) types.UID {
		p := NewCore(nil, "-f").Scan([]File{file(path, content)}, t0)
		require.Len(t, p.Start, 1, p.Problems)
		return p.Start[0].Pod.UID
	}
	web := podYAML("web", "    readinessProbe: {tcpSocket: {port: 80}}\n")
	a := uid("d/web.yaml", web)
	assert.Len(t, string(a), 32)
	assert.Equal(t, a, uid("d/web.yaml", web))
	assert.Equal(t, a, uid("d/web.yaml", "# comment\n"+web), "formatting is not content")
	assert.NotEqual(t, a, uid("d/other.yaml", web))
	assert.NotEqual(t, a, uid("d/web.yaml", podYAML("web", "")))

	fromURL := func(url, content string) types.UID {
		p := NewCore(nil, "-f").ScanURL(file(url, content), t0)
		require.Len(t, p.Start, 1, p.Problems)
		return p.Start[0].Pod.UID
	}
	u := fromURL(testURL, web)
	assert.Equal(t, u, fromURL(testURL, web), "the same URL and content: the same pod (a restarted node adopts it)")
	assert.NotEqual(t, u, fromURL("http://other.example/pods.yaml", web))
	assert.NotEqual(t, u, uid(testURL, web), "a URL is not a file of that name")
	member := func(cluster string) types.UID {
		pods, problems := NewClusterCore(nil, "-f", cluster).ReadURL(file(testURL, web), t0)
		require.Len(t, pods, 1, problems)
		return pods[0].UID
	}
	assert.Equal(t, member("demo"), member("demo"), "every member derives the same UID")
	assert.NotEqual(t, member("demo"), member("other"))
	assert.NotEqual(t, member("demo"), u)

	p := NewCore(nil, "-f").Scan([]File{file("d/web.yaml", web)}, t0).Start[0].Pod
	assert.Equal(t, map[string]string{
		"kubernetes.io/config.hash":   string(a),
		"kubernetes.io/config.source": "file",
		"kubernetes.io/config.seen":   "2026-11-21T10:00:00Z",
	}, p.Annotations, "kubelet's annotations of a static pod")
	assert.Equal(t, "http", NewCore(nil, "-f").ScanURL(file(testURL, web), t0).Start[0].Pod.Annotations["kubernetes.io/config.source"])
	assert.Equal(t, "default", p.Namespace)
	assert.Equal(t, v1.RestartPolicyAlways, p.Spec.RestartPolicy)
	assert.Equal(t, int32(10), p.Spec.Containers[0].ReadinessProbe.PeriodSeconds, "probe defaults")
	assert.Equal(t, t0, p.CreationTimestamp.Time)
}

// TestClusterCoreReadsTheSameSetOnEveryMember: in a cluster the core only reads. Members keeping
// the same files in different directories derive the same UIDs (the cluster name, the file's name
// and the pod's content); another content, file name or cluster is another pod; metadata.uid and
// clashes with -f pods are refused with the file and field path; a pod of a file that turns
// invalid stays in the set.
func TestClusterCoreReadsTheSameSetOnEveryMember(t *testing.T) {
	fromF := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "f-uid"}}
	web, db := podYAML("web", "    readinessProbe: {tcpSocket: {port: 80}}\n"), podYAML("db", "")
	read := func(c *Core, dir string, files map[string]string) (map[string]types.UID, []string) {
		var list []File
		for _, name := range sortedKeys(files) {
			list = append(list, file(dir+"/"+name, files[name]))
		}
		pods, problems := c.Read(list, t0)
		uids := map[string]types.UID{}
		for _, p := range pods {
			uids[p.Name] = p.UID
		}
		return uids, problems
	}
	files := map[string]string{"web.yaml": web, "db.yaml": db}
	m1, problems := read(NewClusterCore([]*v1.Pod{fromF}, "-f", "demo"), "/etc/m1/pods", files)
	assert.Empty(t, problems)
	m2, _ := read(NewClusterCore([]*v1.Pod{fromF}, "-f", "demo"), "/srv/m2", files)
	assert.Equal(t, m1, m2, "the same files in other directories: the same pods")
	require.Len(t, m1, 2)
	assert.NotEqual(t, m1["web"], m1["db"])

	other, _ := read(NewClusterCore(nil, "-f", "prod"), "/etc/m1/pods", files)
	assert.NotEqual(t, m1["web"], other["web"], "another cluster")
	moved, _ := read(NewClusterCore(nil, "-f", "demo"), "/etc/m1/pods", map[string]string{"www.yaml": web})
	assert.NotEqual(t, m1["web"], moved["web"], "another file name")
	alone, _ := read(NewCore(nil, "-f"), "/etc/m1/pods", files)
	assert.NotEqual(t, m1["web"], alone["web"], "node alone derives from the path")

	c := NewClusterCore([]*v1.Pod{fromF}, "-f", "demo")
	uids, problems := read(c, "d", map[string]string{
		"api.yaml":  podYAML("api", ""),
		"uid.yaml":  strings.Replace(db, "metadata: {name: db}", "metadata: {name: db, uid: u1}", 1),
		"web.yaml":  web,
		"web2.yaml": podYAML("web", ""),
	})
	assert.Equal(t, map[string]types.UID{"web": m1["web"]}, uids, "only web.yaml is valid, and it is the same pod as in /etc/m1/pods")
	assert.Equal(t, []string{
		"d/uid.yaml: metadata.uid: Forbidden: with --cluster a static pod's UID derives from its file name and content, alike on every member (remove it)",
		`d/api.yaml: metadata.name: Duplicate value: pod "default/api" is also run from -f`,
		`d/web2.yaml: metadata.name: Duplicate value: pod "default/web" is also defined in d/web.yaml`,
	}, problems)

	changed, problems := read(c, "d", map[string]string{"web.yaml": podYAML("web", "    workingDir: /tmp\n")})
	assert.Empty(t, problems)
	assert.NotEqual(t, m1["web"], changed["web"], "a changed pod is a new pod")
	kept, problems := read(c, "d", map[string]string{"web.yaml": "kind: Pod\n"})
	assert.Equal(t, changed, kept, "an invalid file keeps its last valid pods in the set")
	assert.Contains(t, problems, "d/web.yaml: not applied; the pods of its last valid version keep running")
	none, _ := read(c, "d", nil)
	assert.Empty(t, none, "a removed file leaves the set")
}

// TestUnreadFilesKeepWhatTheCoreKnew: a file passed as Unread (not read again since the last Scan)
// keeps its pods, and its problems, as last read; a file never read is not taken on trust.
func TestUnreadFilesKeepWhatTheCoreKnew(t *testing.T) {
	c := NewCore(nil, "-f")
	p := c.Scan([]File{file("/m/a.yaml", podYAML("a", "")), file("/m/bad.yaml", "kind: Pod\n"), file("/m/b.yaml", podYAML("b", ""))}, t0)
	assert.Equal(t, []string{"start a (added)", "start b (added)"}, summary(p)[:2])
	require.Len(t, p.Problems, 1)

	p = c.Scan([]File{{Path: "/m/a.yaml", Unread: true}, {Path: "/m/bad.yaml", Unread: true}, file("/m/b.yaml", podYAML("b", "    workingDir: /tmp\n"))}, t0)
	assert.Equal(t, []string{"stop b (changed)"}, summary(p), "only the file read again changes; a's pod stays, bad.yaml's problem is not reported again")
	assert.Len(t, c.files["/m/bad.yaml"].problems, 1, "bad.yaml's problem lasts")

	p = c.Scan([]File{{Path: "/m/a.yaml", Unread: true}, {Path: "/m/new.yaml", Unread: true}}, t0)
	assert.Contains(t, summary(p), "/m/new.yaml: not read", "a file the core never saw is a problem, not a pod")
	assert.NotContains(t, strings.Join(summary(p), "\n"), "stop a", "a is unread and unchanged")
	assert.Equal(t, []string{"a"}, names(c.Running()), "b (stopping to be replaced) left the listing, so nothing replaces it")
}
