package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/clock"
)

// TestTerminationMessage: kubelet's rules, each case a container, its files and its exit.
func TestTerminationMessage(t *testing.T) {
	fallback := v1.TerminationMessageFallbackToLogsOnError
	var lines []string
	for i := 1; i <= 100; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	long := strings.Join(lines, "\n") + "\n"
	for _, tc := range []struct {
		name          string
		policy        v1.TerminationMessagePolicy
		file, log     string // "" for none
		writtenBefore bool   // the file was there, unchanged, when the instance started
		code          int32
		reason        string
		want          string
	}{
		{name: "the file", file: "bye\n", code: 0, want: "bye\n"},
		{name: "the file wins over the log", policy: fallback, file: "bye", log: "boom\n", code: 1, want: "bye"},
		{name: "a file this run did not write", file: "old", writtenBefore: true, code: 1, want: ""},
		{name: "a file this run did not write, then the log", policy: fallback, file: "old", writtenBefore: true, log: "boom\n", code: 1, want: "boom\n"},
		{name: "an empty file, then the log", policy: fallback, file: "", log: "boom\n", code: 2, want: "boom\n"},
		{name: "no file: the log's tail", policy: fallback, log: long, code: 1, want: strings.Join(lines[20:], "\n") + "\n"},
		{name: "the log only for a failure", policy: fallback, log: "fine\n", code: 0, want: ""},
		{name: "not for a start error", policy: fallback, log: "x\n", code: 128, reason: "StartError", want: ""},
		{name: "File policy: no log", log: "boom\n", code: 1, want: ""},
		{name: "the file, at most 4 KiB", file: strings.Repeat("a", 5000) + "END", code: 0, want: strings.Repeat("a", 4093) + "END"},
		{name: "the log, at most 2 KiB", policy: fallback, log: strings.Repeat("b", 3000) + "END\n", code: 1, want: strings.Repeat("b", 2044) + "END\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := &v1.Container{Name: "c", WorkingDir: dir, TerminationMessagePath: "termination-log", TerminationMessagePolicy: tc.policy}
			logPath := filepath.Join(dir, "0.log")
			if tc.log != "" {
				require.NoError(t, os.WriteFile(logPath, []byte(tc.log), 0o600))
			}
			path := filepath.Join(dir, "termination-log")
			var mark fileMark
			if tc.writtenBefore {
				require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o600))
				mark = markOf(path)
			} else {
				mark = markOf(path)
				if tc.file != "" || tc.name == "an empty file, then the log" {
					require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o600))
				}
			}
			assert.Equal(t, tc.want, terminationMessage(c, &mark, tc.code, tc.reason, logPath))
		})
	}
	assert.Equal(t, "", terminationMessage(&v1.Container{Name: "c"}, nil, 1, "", "/nonexistent"), "no path, File policy")
	msg := terminationMessage(&v1.Container{Name: "c", TerminationMessagePolicy: fallback}, nil, 1, "", filepath.Join(t.TempDir(), "none.log"))
	assert.Contains(t, msg, "Error on reading termination message from logs: open ")
}

// The pod's containers share 12 KiB of termination messages, as kubelet's status manager cuts them.
func TestTruncateMessages(t *testing.T) {
	st := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: strings.Repeat("x", 5000)}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: strings.Repeat("y", 5000)}}},
		{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: "short"}}},
	}, InitContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	truncateMessages(&st, 3)
	assert.Len(t, st.ContainerStatuses[0].State.Terminated.Message, 4096)
	assert.Len(t, st.ContainerStatuses[0].LastTerminationState.Terminated.Message, 4096)
	assert.Equal(t, "short", st.ContainerStatuses[1].State.Terminated.Message)
}

// TestTerminationMessagesOfRealContainers: what a container writes to its terminationMessagePath
// (relative: under its workingDir) is its terminated state's message; with FallbackToLogsOnError
// and no such file, a failed container's message is its log's tail.
func TestTerminationMessagesOfRealContainers(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	pod := shPod("messages", v1.RestartPolicyNever, "echo 'config missing' > termination-log; exit 3")
	pod.Spec.Containers[0].WorkingDir = dir
	pod.Spec.Containers[0].TerminationMessagePath = "termination-log"
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "logs", WorkingDir: dir,
		Command:                  []string{"sh", "-c", "echo starting; echo 'panic: nil map' >&2; exit 2"},
		TerminationMessagePath:   "/nonexistent/termination-log",
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError})
	require.NoError(t, rt.Run(pod))
	for name, want := range map[string]string{"c": "config missing\n", "logs": "starting\npanic: nil map\n"} {
		require.Eventually(t, func() bool {
			cs, _ := rec.container(pod.UID, name)
			return cs.State.Terminated != nil
		}, settle, tick)
		cs, _ := rec.container(pod.UID, name)
		assert.Equal(t, want, cs.State.Terminated.Message, name)
	}
}
