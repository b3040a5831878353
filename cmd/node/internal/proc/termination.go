package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
)

// kubelet 1.37's bounds on termination messages (pkg/kubelet/container/runtime.go).
const (
	maxTerminationMessage     = 4 * 1024  // read from terminationMessagePath
	maxTerminationLogBytes    = 2 * 1024  // FallbackToLogsOnError: the log's tail...
	maxTerminationLogLines    = 80        // ...of at most these lines
	maxPodTerminationMessages = 12 * 1024 // a pod's containers share it (the status manager's normalizeStatus)
)

// fileMark is what a container's terminationMessagePath held when the instance started, so that a
// file this run did not write is not its message.
type fileMark struct {
	exists bool
	mod    time.Time
	size   int64
}

// terminationPath is where node reads a container's termination message: its
// terminationMessagePath (the API's default, /dev/termination-log, when unset) on the host, for
// node mounts nothing; a relative one under its workingDir.
func terminationPath(c *v1.Container) string {
	p := c.TerminationMessagePath
	if p == "" {
		p = v1.TerminationMessagePathDefault
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.WorkingDir, p)
}

// markOf stats path (an error reads as "absent").
func markOf(path string) fileMark {
	fi, err := os.Stat(path)
	if err != nil {
		return fileMark{}
	}
	return fileMark{exists: true, mod: fi.ModTime(), size: fi.Size()}
}

// terminationMessage is kubelet's for an instance of c that ended with code and reason: what it
// wrote to its terminationMessagePath (at most 4 KiB; since started, the file as the instance found
// it; nil for an instance this node did not start), else, with terminationMessagePolicy
// FallbackToLogsOnError and a failed exit, the last 80 lines of its log, at most 2 KiB (not for an
// instance that could not start). A file that cannot be read is kubelet's message for that.
func terminationMessage(c *v1.Container, started *fileMark, code int32, reason, logPath string) string {
	fallback := c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError && code != 0 && reason != "StartError"
	path := terminationPath(c)
	if now := markOf(path); now.exists && (started == nil || *started != now) {
		data, err := readTail(path, maxTerminationMessage)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("Error on reading termination log %s: %v", path, err)
		}
		if len(data) > 0 || !fallback {
			return string(data)
		}
	}
	if !fallback {
		return ""
	}
	data, err := readTail(logPath, maxTerminationLogBytes)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	if i := len(data); i > 0 {
		lines := 0
		end := len(data)
		if data[end-1] == '\n' {
			end-- // a final newline ends the last line
		}
		for i = end - 1; i >= 0; i-- {
			if data[i] == '\n' {
				if lines++; lines == maxTerminationLogLines {
					break
				}
			}
		}
		data = data[i+1:]
	}
	return string(data)
}

// readTail reads at most the last n bytes of path.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	_, err = io.Copy(&buf, io.LimitReader(f, n))
	return buf.Bytes(), err
}

// truncateMessages cuts every terminated state's message of st to the pod's share per container
// (kubelet's status manager: 12 KiB over all the pod's containers).
func truncateMessages(st *v1.PodStatus, containers int) {
	if containers == 0 {
		return
	}
	per := maxPodTerminationMessages / containers
	cut := func(t *v1.ContainerStateTerminated) {
		if t != nil && len(t.Message) > per {
			t.Message = t.Message[:per]
		}
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			cut(list[i].State.Terminated)
			cut(list[i].LastTerminationState.Terminated)
		}
	}
}
