package upstream

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the v1 ↔ internal conversions and v1 defaults
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/features"

	probeactorfeatures "github.com/probeactor/probeactor/features"
	"github.com/probeactor/probeactor/internal/podspec"
)

// covered are the field paths internal/podspec.Validate owns (its doc: names, restart policies and
// rules, the grace period, containers and their names, env entries, every probe). The API server's
// errors elsewhere (an image, resources, a port's name) are not node's to report.
var covered = regexp.MustCompile(`^(metadata\.(name|namespace)|spec\.(restartPolicy|terminationGracePeriodSeconds|containers)$|` +
	`spec\.(initContainers|containers)\[\d+\]\.(name|env|restartPolicy|restartPolicyRules|livenessProbe|readinessProbe|startupProbe)\b)`)

// TestValidationIsTheAPIServers: on 8,000 random pods, each a valid pod with one to three
// mutations of what podspec validates, podspec.SetDefaults then podspec.Validate refuses exactly
// what the API server 1.37 (v1 defaults, then ValidatePodCreate with the options it computes)
// refuses on the fields podspec owns, in the same words: every error of one is an error of the
// other. Both run with every gate on (podspec.Validate applies none; ValidateGates refuses a gate
// that is off); the gates being global, this test does not run in parallel.
func TestValidationIsTheAPIServers(t *testing.T) {
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.H2CContainerProbe: true, features.GRPCContainerProbeTLS: true})
	r := rand.New(rand.NewPCG(5, 67))
	refused, mismatched := 0, 0
	for i := range 8000 {
		pod := validPod()
		var did []string
		for range 1 + r.IntN(3) {
			m := mutations[r.IntN(len(mutations))]
			did = append(did, m.name)
			m.apply(pod, r)
		}
		ours, theirs := ourErrors(pod.DeepCopy()), apiServerErrors(t, pod.DeepCopy())
		if len(theirs) > 0 {
			refused++
		}
		if !assert.Equal(t, theirs, ours, "pod %d (%s):\n%s", i, strings.Join(did, ", "), describePod(pod)) {
			if mismatched++; mismatched == 5 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d of 8000 pods refused", refused)
	assert.Greater(t, refused, 2000, "the mutations make many pods invalid")
	assert.Less(t, refused, 7600, "and leave many valid")
}

func ourErrors(pod *v1.Pod) []string {
	podspec.SetDefaults(pod)
	var out []string
	for _, e := range podspec.Validate(pod) {
		if covered.MatchString(e.Field) {
			out = append(out, e.Error())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func apiServerErrors(t *testing.T, pod *v1.Pod) []string {
	legacyscheme.Scheme.Default(pod)
	var internal core.Pod
	require.NoError(t, legacyscheme.Scheme.Convert(pod, &internal, nil))
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&internal.Spec, nil, &internal.ObjectMeta, nil)
	var out []string
	for _, e := range corevalidation.ValidatePodCreate(&internal, opts) {
		if covered.MatchString(e.Field) {
			out = append(out, e.Error())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// validPod is a pod both accept: an init container, a sidecar and two app containers, each with the
// fields the API server requires of a container (an image, kubelet's pull and termination policies
// come from the defaults).
func validPod() *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	c := func(name string) v1.Container {
		return v1.Container{Name: name, Image: "busybox", Command: []string{"sleep", "1"},
			Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	}
	side := c("side")
	side.RestartPolicy = &always
	side.Ports = nil
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{c("init"), side},
			Containers:     []v1.Container{c("app"), c("aux")},
		},
	}
}

type mutation struct {
	name  string
	apply func(p *v1.Pod, r *rand.Rand)
}

func pickOf[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// someContainer is one of the pod's containers, init or app.
func someContainer(p *v1.Pod, r *rand.Rand) *v1.Container {
	n := len(p.Spec.InitContainers) + len(p.Spec.Containers)
	if n == 0 {
		p.Spec.Containers = []v1.Container{{Name: "again", Image: "busybox"}}
		return &p.Spec.Containers[0]
	}
	if i := r.IntN(n); i < len(p.Spec.InitContainers) {
		return &p.Spec.InitContainers[i]
	} else {
		return &p.Spec.Containers[i-len(p.Spec.InitContainers)]
	}
}

// someProbe is one of a random container's probes, created when absent.
func someProbe(p *v1.Pod, r *rand.Rand) *v1.Probe {
	c := someContainer(p, r)
	slot := pickOf(r, &c.LivenessProbe, &c.ReadinessProbe, &c.StartupProbe)
	if *slot == nil {
		*slot = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	}
	return *slot
}

var names = []string{"", "ok", "Bad_Name", "a.b", "-x", strings.Repeat("a", 64), strings.Repeat("a", 254), "app"}

var mutations = []mutation{
	{"pod name", func(p *v1.Pod, r *rand.Rand) { p.Name = pickOf(r, names...) }},
	{"namespace", func(p *v1.Pod, r *rand.Rand) {
		p.Namespace = pickOf(r, "kube-system", "Bad", "a.b", strings.Repeat("n", 64))
	}},
	{"restart policy", func(p *v1.Pod, r *rand.Rand) {
		p.Spec.RestartPolicy = pickOf[v1.RestartPolicy](r, "", v1.RestartPolicyAlways, v1.RestartPolicyNever, v1.RestartPolicyOnFailure, "Sometimes")
	}},
	{"grace period", func(p *v1.Pod, r *rand.Rand) { p.Spec.TerminationGracePeriodSeconds = ptr(pickOf[int64](r, -1, 0, 5)) }},
	{"no containers", func(p *v1.Pod, _ *rand.Rand) { p.Spec.Containers = nil }},
	{"container name", func(p *v1.Pod, r *rand.Rand) { someContainer(p, r).Name = pickOf(r, names...) }},
	{"container restart policy", func(p *v1.Pod, r *rand.Rand) {
		someContainer(p, r).RestartPolicy = pickOf(r, nil, ptr(v1.ContainerRestartPolicyAlways), ptr(v1.ContainerRestartPolicyNever),
			ptr(v1.ContainerRestartPolicyOnFailure), ptr(v1.ContainerRestartPolicy("Sometimes")))
	}},
	{"restart rules", func(p *v1.Pod, r *rand.Rand) {
		c := someContainer(p, r)
		c.RestartPolicyRules = nil
		for range pickOf(r, 0, 1, 2, 21) {
			rule := v1.ContainerRestartRule{Action: pickOf[v1.ContainerRestartRuleAction](r, v1.ContainerRestartRuleActionRestart,
				v1.ContainerRestartRuleActionRestartAllContainers, "Ignore", "")}
			if r.IntN(6) > 0 {
				rule.ExitCodes = &v1.ContainerRestartRuleOnExitCodes{Operator: pickOf[v1.ContainerRestartRuleOnExitCodesOperator](r,
					v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn, "Between", "")}
				for range pickOf(r, 0, 1, 3, 256) {
					rule.ExitCodes.Values = append(rule.ExitCodes.Values, pickOf[int32](r, 0, 1, 42, -1, 256))
				}
			}
			c.RestartPolicyRules = append(c.RestartPolicyRules, rule)
		}
	}},
	{"env", func(p *v1.Pod, r *rand.Rand) {
		c := someContainer(p, r)
		e := v1.EnvVar{Name: pickOf(r, "", "OK", "my.var-1", "1st", "A=B", "tab\there", "ü", "sp ace"), Value: pickOf(r, "", "x")}
		if r.IntN(3) == 0 {
			e.ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		}
		c.Env = append(c.Env, e)
	}},
	{"probe timing", func(p *v1.Pod, r *rand.Rand) {
		pr := someProbe(p, r)
		v := func() int32 { return pickOf[int32](r, -1, 0, 1, 2, 5) }
		switch r.IntN(5) {
		case 0:
			pr.InitialDelaySeconds = v()
		case 1:
			pr.TimeoutSeconds = v()
		case 2:
			pr.PeriodSeconds = v()
		case 3:
			pr.SuccessThreshold = v()
		default:
			pr.FailureThreshold = v()
		}
	}},
	{"probe grace period", func(p *v1.Pod, r *rand.Rand) {
		someProbe(p, r).TerminationGracePeriodSeconds = ptr(pickOf[int64](r, -1, 0, 1, 10))
	}},
	{"probe handler", func(p *v1.Pod, r *rand.Rand) {
		pr := someProbe(p, r)
		port := pickOf(r, intstr.FromInt32(8080), intstr.FromInt32(0), intstr.FromInt32(70000), intstr.FromString("http"),
			intstr.FromString("Bad_Port"), intstr.FromString("toolongportname"), intstr.FromString(""))
		h := v1.ProbeHandler{}
		switch r.IntN(6) {
		case 0:
			h.Exec = &v1.ExecAction{Command: pickOf(r, []string{"true"}, nil)}
		case 1:
			h.HTTPGet = &v1.HTTPGetAction{Port: port, Path: pickOf(r, "/", "", "healthz"),
				Scheme: pickOf[v1.URIScheme](r, "", v1.URISchemeHTTP, v1.URISchemeHTTPS, "FTP")}
			if r.IntN(3) == 0 {
				h.HTTPGet.Protocol = ptr(pickOf[v1.HTTPProtocol](r, "HTTP1", "HTTP2", "SPDY"))
			}
			if r.IntN(4) == 0 {
				h.HTTPGet.Host = "example.com"
			}
		case 2:
			h.TCPSocket = &v1.TCPSocketAction{Port: port}
		case 3:
			h.GRPC = &v1.GRPCAction{Port: pickOf[int32](r, 9000, 0, 70000)}
			if r.IntN(3) == 0 {
				h.GRPC.Mode = ptr(pickOf[v1.GRPCProbeMode](r, "Plaintext", "TLS", "QUIC"))
			}
		case 4: // two handlers
			h.Exec = &v1.ExecAction{Command: []string{"true"}}
			h.TCPSocket = &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}
		default: // none
		}
		pr.ProbeHandler = h
	}},
}

func describePod(p *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name=%q namespace=%q restartPolicy=%q grace=%v\n", p.Name, p.Namespace, p.Spec.RestartPolicy, deref(p.Spec.TerminationGracePeriodSeconds))
	for _, set := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range set {
			fmt.Fprintf(&b, "  %q restartPolicy=%v rules=%d env=%+v\n", c.Name, deref(c.RestartPolicy), len(c.RestartPolicyRules), c.Env)
			for _, pr := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if pr != nil {
					fmt.Fprintf(&b, "    probe %+v\n", *pr)
				}
			}
		}
	}
	return b.String()
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestDefaultsAreTheAPIServers: on the same random pods, what internal/podspec fills in
// (SetDefaults, then SetGatedDefaults with H2CContainerProbe and GRPCContainerProbeTLS on) is what
// the API server's v1 defaults fill in, for what podspec owns: the restart policy, the grace period,
// ports' protocols and every field of every probe.
func TestDefaultsAreTheAPIServers(t *testing.T) {
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.H2CContainerProbe: true, features.GRPCContainerProbeTLS: true})
	gates, err := probeactorfeatures.Parse("H2CContainerProbe=true,GRPCContainerProbeTLS=true")
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(7, 79))
	for i := range 4000 {
		pod := validPod()
		for range 1 + r.IntN(3) {
			mutations[r.IntN(len(mutations))].apply(pod, r)
		}
		ours, theirs := pod.DeepCopy(), pod.DeepCopy()
		podspec.SetDefaults(ours)
		podspec.SetGatedDefaults(ours, gates)
		legacyscheme.Scheme.Default(theirs)
		if !assert.Equal(t, defaultedFields(theirs), defaultedFields(ours), "pod %d:\n%s", i, describePod(pod)) {
			t.FailNow()
		}
	}
}

// defaultedFields are the fields of a defaulted pod that podspec's defaults own.
func defaultedFields(p *v1.Pod) []any {
	out := []any{p.Spec.RestartPolicy, deref(p.Spec.TerminationGracePeriodSeconds)}
	for _, set := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range set {
			out = append(out, c.Ports, c.LivenessProbe, c.ReadinessProbe, c.StartupProbe)
		}
	}
	return out
}
