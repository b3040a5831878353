package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/cmd/node/internal/kubeletconfig"
	"github.com/probeactor/probeactor/features"
)

const (
	configUsage = "kubelet's configuration `FILE`: a KubeletConfiguration (kubelet.config.k8s.io/v1beta1), such as kubeadm's /var/lib/kubelet/config.yaml. " +
		"node takes the fields that mean what one of its flags means (staticPodPath, staticPodURL, staticPodURLHeader, fileCheckFrequency, httpCheckFrequency, " +
		"address with a readOnlyPort that is not 0, enableProfilingHandler, featureGates, crashLoopBackOff.maxContainerRestartPeriod, nodeStatusUpdateFrequency, logging.format) " +
		"and logs the names of the others; a flag given on the command line wins, and --feature-gates merges over featureGates, as kubelet's"
	configDirUsage = "kubelet's drop-in configuration `DIR`: its *.conf files (a KubeletConfiguration each; subdirectories included), in lexical order, merged over --config's as JSON merge patches, as kubelet's --config-dir"
)

// kubeletConfig is what --config and --config-dir gave node: the settings applied, by flag.
type kubeletConfig struct {
	read    *kubeletconfig.Config
	applied map[string]kubeletconfig.Setting // flag → the setting that gave its value
	kept    []string                         // the flags the command line kept from the files
}

// applyKubeletConfig reads --config and --config-dir and sets, from them, the flags the command
// line did not give (given); featureGates is merged under --feature-gates. Errors name the file
// and the field.
func applyKubeletConfig(fs *flag.FlagSet, cfg *runConfig, given map[string]bool) (*kubeletConfig, error) {
	read, err := kubeletconfig.Read(cfg.configFile, cfg.configDir)
	if err != nil {
		return nil, err
	}
	kc := &kubeletConfig{read: read, applied: map[string]kubeletconfig.Setting{}}
	for _, s := range read.Settings {
		switch {
		case s.Flag == "feature-gates": // kubelet: the flag's gates over the file's, gate by gate
			g, err := features.Parse(s.Value + "," + cfg.gates.String())
			if err != nil && given["feature-gates"] {
				return nil, fmt.Errorf("--feature-gates over featureGates (%s): %w", s.From, err)
			} else if err != nil {
				return nil, fmt.Errorf("%s: featureGates: %w", s.From, err)
			}
			cfg.gates = g
		case given[s.Flag]:
			kc.kept = append(kc.kept, s.Flag)
			continue
		case s.Flag == "manifest-url-header": // exact: a value may hold a comma
			cfg.urlHeader.header = read.Header.Clone()
		default:
			if err := fs.Set(s.Flag, s.Value); err != nil {
				return nil, fmt.Errorf("%s: %s: %q: %w", s.From, s.Field, s.Value, err)
			}
		}
		kc.applied[s.Flag] = s
	}
	return kc, nil
}

// sets reports whether the files gave flag its value.
func (kc *kubeletConfig) sets(flag string) bool {
	if kc == nil {
		return false
	}
	_, ok := kc.applied[flag]
	return ok
}

// explain adds, to an error that names a flag the files set, the field and the file it came from.
func (kc *kubeletConfig) explain(err error) string {
	msg := err.Error()
	if kc == nil {
		return msg
	}
	for _, flag := range slices.Sorted(maps.Keys(kc.applied)) {
		if s := kc.applied[flag]; strings.Contains(msg, "--"+flag) {
			msg += fmt.Sprintf(" (--%s is %s in %s)", flag, s.Field, s.From)
		}
	}
	return msg
}

// log says what the files set, what the command line overrode, what node does not use, and
// kubelet's warnings.
func (kc *kubeletConfig) log(log hclog.Logger) {
	if kc == nil {
		return
	}
	for _, w := range kc.read.Warnings {
		log.Warn("kubelet configuration: " + w)
	}
	var applied []string
	for _, flag := range slices.Sorted(maps.Keys(kc.applied)) {
		value := kc.applied[flag].Value
		if flag == "manifest-url-header" { // names only: a header may carry a credential
			value = strings.Join(slices.Sorted(maps.Keys(kc.read.Header)), ",")
		}
		applied = append(applied, fmt.Sprintf("--%s=%s (%s)", flag, value, kc.applied[flag].Field))
	}
	log.Info("kubelet configuration read", "applied", applied, "kept_from_command_line", kc.kept)
	byFile := map[string][]string{}
	for _, u := range kc.read.Unused {
		byFile[u.File] = append(byFile[u.File], u.Field)
	}
	for _, file := range slices.Sorted(maps.Keys(byFile)) {
		log.Info("kubelet configuration: fields node does not use", "file", file, "fields", byFile[file])
	}
}
