package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func waitPod(name string, uid types.UID, ready bool, labels map[string]string) v1.Pod {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid, Labels: labels},
		Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: status}}}}
}

// `node wait` waits as kubectl wait does: each pod in turn until every --for holds, printing
// "pod/NAME condition met"; a timeout, a pod that goes while awaited or a name not found is an
// error in kubectl's words.
func TestWaitIsKubectlWait(t *testing.T) {
	saved := waitPollInterval
	waitPollInterval = time.Millisecond
	defer func() { waitPollInterval = saved }()
	app := map[string]string{"app": "web"}
	list := func(pods ...v1.Pod) v1.PodList { return v1.PodList{Items: pods} }

	srv := fakeSequence(t, "/pods",
		list(waitPod("web", "u1", false, app), waitPod("web-2", "u2", false, app)),
		list(waitPod("web", "u1", true, app), waitPod("web-2", "u2", false, app)),
		list(waitPod("web", "u1", true, app), waitPod("web-2", "u2", true, app)))
	code, out, errOut := runClient(t, "wait", srv, "pods", "-l", "app=web", "--for", "condition=Ready")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "pod/web condition met\npod/web-2 condition met\n", out)

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", true, nil)), list(waitPod("web", "u1", true, nil)), list())
	code, out, errOut = runClient(t, "wait", srv, "pod/web", "--for=delete")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "pod/web condition met\n", out)

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", true, nil)), list(waitPod("web", "u9", false, nil)))
	code, out, errOut = runClient(t, "wait", srv, "pod/web", "--for=delete")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "pod/web condition met\n", out, "replaced by a pod of another UID: the one awaited is gone")

	srv = fakeSequence(t, "/pods", list(), list(), list(waitPod("web", "u1", false, nil)), list(waitPod("web", "u1", true, nil)))
	code, out, errOut = runClient(t, "wait", srv, "pods", "web", "--for=create", "--for", "condition=Ready")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "pod/web condition met\n", out)

	running := waitPod("web", "u1", false, nil)
	running.Status.Phase = v1.PodRunning
	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", false, nil)), list(running))
	code, out, errOut = runClient(t, "wait", srv, "pod/web", "--for", "jsonpath={.status.phase}=Running")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "pod/web condition met\n", out)

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", false, nil)))
	code, _, errOut = runClient(t, "wait", srv, "pod/web", "--for", "jsonpath={.status.conditions}=x")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: jsonpath leads to a nested object or list which is not supported\n", errOut)

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", false, nil)), list())
	code, _, errOut = runClient(t, "wait", srv, "pod/web", "--for", "condition=Ready")
	assert.Equal(t, 1, code)
	assert.Equal(t, "Error from server (NotFound): pods \"web\" not found\n", errOut, "gone while its condition was awaited")

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", false, nil)), list(waitPod("web", "u1", false, nil)),
		list(waitPod("web", "u1", false, nil)), list(waitPod("web", "u1", false, nil)))
	code, _, errOut = runClient(t, "wait", srv, "pod/web", "--for", "condition=Ready", "--timeout", "1ns")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: timed out waiting for the condition on pods/web\n", errOut)

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", false, nil)))
	code, _, errOut = runClient(t, "wait", srv, "pod/web", "--for", "condition=Ready", "--timeout", "0")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: condition not met for pods/web\n", errOut, "--timeout 0: check once")

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", true, nil)))
	code, _, errOut = runClient(t, "wait", srv, "pod/nope", "--for", "condition=Ready")
	assert.Equal(t, 1, code)
	assert.Equal(t, "Error from server (NotFound): pods \"nope\" not found\n", errOut)

	srv = fakeSequence(t, "/pods", list(waitPod("web", "u1", true, nil)))
	code, out, errOut = runClient(t, "wait", srv, "pod/nope", "--for", "delete")
	assert.Equal(t, 0, code, errOut)
	assert.Empty(t, out, "kubectl: nothing to wait for, and no error")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod/web"}, "--for is required: condition=NAME[=VALUE], jsonpath=PATH[=VALUE], delete or create"},
		{[]string{"pod/web", "--for", "jsonpath={.status.phase}="}, "jsonpath wait has to have a value after equal sign"},
		{[]string{"pod/web", "--for", "ready"}, `unrecognized condition: "ready"`},
		{[]string{"pods", "--for", "delete"}, "no name was specified: name pods, or use -l SELECTOR or --all"},
		{[]string{"pod/web", "--all", "--for", "delete"}, "selectors and the all flag cannot be used when passing resource/name arguments"},
		{[]string{"deployment/web", "--for", "delete"}, "only pods can be waited for: `node wait pod[s] [NAME...]` or `node wait pod/NAME...`"},
	} {
		code, _, errOut := runClient(t, "wait", "127.0.0.1:1", tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}
