package staticpod

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settleDelay is how long the watcher waits after the first change event of a burst before it reads the
// manifest path: the burst's other events fold into that one read, and a file written in several
// steps (cp, an editor saving in place) is usually read once, complete. kubelet reads at every
// event.
const settleDelay = 100 * time.Millisecond

// notifier is what the watcher uses of an fsnotify.Watcher (tests substitute a fake one).
type notifier interface {
	Add(dir string) error
	Remove(dir string) error
	Events() <-chan fsnotify.Event // closed when the notifier has stopped
	Errors() <-chan error
	Close() error
}

// fsNotifier is a notifier on inotify.
type fsNotifier struct{ w *fsnotify.Watcher }

func newFSNotifier() (notifier, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsNotifier{w}, nil
}

func (n fsNotifier) Add(dir string) error          { return n.w.Add(dir) }
func (n fsNotifier) Remove(dir string) error       { return n.w.Remove(dir) }
func (n fsNotifier) Events() <-chan fsnotify.Event { return n.w.Events }
func (n fsNotifier) Errors() <-chan error          { return n.w.Errors }
func (n fsNotifier) Close() error                  { return n.w.Close() }

// watchDir is the directory watched for the manifest path: the path itself when it is a directory,
// its parent when it names one file.
func watchDir(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		return path, nil
	}
	return filepath.Dir(path), nil
}

// change is what an event in the watched directory means to the watcher.
type change int

const (
	unrelated change = iota // another name, or a hidden file: nothing to do
	changed                 // the manifest file, or the directory itself (its mode): read the whole path soon
	named                   // one manifest of a directory: read that file soon
	watchGone               // the watched directory itself was removed or moved away: read soon, watch again
)

// classify tells what ev, from the watch on dir, means for the manifest path (both clean). In a
// directory every name not starting with "." is a manifest; with a path naming one file, only that
// file's name is.
func classify(path, dir string, ev fsnotify.Event) change {
	name := filepath.Clean(ev.Name)
	switch {
	case name == dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
		return watchGone
	case path != dir: // one manifest file, watched through its directory
		if name == path {
			return changed
		}
		return unrelated
	case name == dir: // the directory's own mode changed: it may no longer be readable
		return changed
	case filepath.Dir(name) != dir || strings.HasPrefix(filepath.Base(name), "."):
		return unrelated
	default:
		return named
	}
}

// explainWatchError adds what to do to the errors of inotify's limits.
func explainWatchError(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w (inotify's watch limit: raise fs.inotify.max_user_watches)", err)
	case errors.Is(err, syscall.EMFILE):
		return fmt.Errorf("%w (inotify's instance limit: raise fs.inotify.max_user_instances)", err)
	default:
		return err
	}
}
