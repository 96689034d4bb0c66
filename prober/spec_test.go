package prober

import (
	"github.com/nodekit/nodekit/kubetypes"

	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCompileProbeRejectsBadInput(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	httpGet := func(port intstr.IntOrString) v1.ProbeHandler {
		return v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: port}}
	}
	cases := []struct {
		name    string
		typ     ProbeType
		probe   v1.Probe
		wantErr string
	}{
		{"no handler", Liveness, v1.Probe{}, "missing probe handler"},
		{"two handlers", Liveness, v1.Probe{ProbeHandler: v1.ProbeHandler{
			Exec: &v1.ExecAction{Command: []string{"x"}}, TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(1)}}}, "2 probe handlers set"},
		{"port 0", Liveness, v1.Probe{ProbeHandler: httpGet(intstr.FromInt32(0))}, "invalid port number: 0"},
		{"port 65536", Liveness, v1.Probe{ProbeHandler: httpGet(intstr.FromInt32(65536))}, "invalid port number: 65536"},
		{"unknown named port", Liveness, v1.Probe{ProbeHandler: httpGet(intstr.FromString("grpc"))}, "couldn't find port: grpc"},
		{"tcp port -1", Readiness, v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(-1)}}}, "invalid port number"},
		{"grpc port 70000", Readiness, v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 70000}}}, "invalid port number: 70000"},
		{"negative failure threshold", Liveness, v1.Probe{FailureThreshold: -1, ProbeHandler: httpGet(intstr.FromInt32(80))}, "failureThreshold must not be negative"},
		{"negative period", Liveness, v1.Probe{PeriodSeconds: -5, ProbeHandler: httpGet(intstr.FromInt32(80))}, "periodSeconds must not be negative"},
		{"liveness success threshold 2", Liveness, v1.Probe{SuccessThreshold: 2, ProbeHandler: httpGet(intstr.FromInt32(80))}, "successThreshold must be 1"},
		{"readiness grace period", Readiness, v1.Probe{TerminationGracePeriodSeconds: ptr(int64(5)), ProbeHandler: httpGet(intstr.FromInt32(80))}, "terminationGracePeriodSeconds"},
		{"empty command", Liveness, v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{}}}, "exec command is empty"},
		{"bad scheme", Liveness, v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Scheme: "ftp", Port: intstr.FromInt32(80)}}}, "unsupported scheme"},
		{"header injection", Liveness, v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80),
			HTTPHeaders: []v1.HTTPHeader{{Name: "X", Value: "a\r\nEvil: 1"}}}}}, "invalid header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileProbe(tc.typ, &tc.probe, c)
			require.ErrorIs(t, err, ErrInvalidProbe)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestCompileProbeDefaults(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Env: []v1.EnvVar{{Name: "FILE", Value: "/ready"}}}
	s, err := compileProbe(Liveness, &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http"), Path: "healthz"}}}, c)
	require.NoError(t, err)
	require.Equal(t, 8080, s.port)
	require.Equal(t, "/healthz", s.http.requestURI)
	require.Equal(t, defaultPeriodSeconds*1e9, float64(s.period))
	require.Equal(t, 1, s.success)
	require.Equal(t, 3, s.failure)

	s, err = compileProbe(Readiness, &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "$(FILE)", "$$(FILE)", "$(NOPE)", "$(", "a$"}}}}, c)
	require.NoError(t, err)
	require.Equal(t, []string{"cat", "/ready", "$(FILE)", "$(NOPE)", "$(", "a$"}, s.cmd)
}

func TestPolicies(t *testing.T) {
	t.Run("applyThreshold", func(t *testing.T) {
		cases := []struct {
			last    Result
			run     int
			r       Result
			s, f    int
			wantRun int
			publish bool
		}{
			{Unknown, 0, Failure, 1, 3, 1, false},
			{Failure, 2, Failure, 1, 3, 3, true},
			{Failure, 2, Success, 1, 3, 1, true},
			{Success, 1, Success, 3, 3, 2, false},
			{Success, 2, Success, 3, 3, 3, true},
			{Success, 5, Unknown, 1, 3, 1, true},
		}
		for _, tc := range cases {
			_, run, publish := applyThreshold(tc.last, tc.run, tc.r, tc.s, tc.f)
			require.Equal(t, tc.wantRun, run, "%+v", tc)
			require.Equal(t, tc.publish, publish, "%+v", tc)
		}
	})
	t.Run("shouldRestart", func(t *testing.T) {
		never, always, onFailure := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure
		rule := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		cases := []struct {
			pod  v1.RestartPolicy
			c    *v1.ContainerRestartPolicy
			rule []v1.ContainerRestartRule
			code int32
			want bool
		}{
			{"", nil, nil, 0, true},
			{v1.RestartPolicyAlways, nil, nil, 0, true},
			{v1.RestartPolicyNever, nil, nil, 1, false},
			{v1.RestartPolicyOnFailure, nil, nil, 0, false},
			{v1.RestartPolicyOnFailure, nil, nil, 1, true},
			{v1.RestartPolicyNever, &always, nil, 0, true},
			{v1.RestartPolicyAlways, &never, nil, 1, false},
			{v1.RestartPolicyNever, &onFailure, nil, 2, true},
			{v1.RestartPolicyNever, &never, rule, 42, true},
			{v1.RestartPolicyNever, &never, rule, 41, false},
		}
		for _, tc := range cases {
			c := &v1.Container{RestartPolicy: tc.c, RestartPolicyRules: tc.rule}
			require.Equal(t, tc.want, kubetypes.ContainerShouldRestart(c, &v1.PodSpec{RestartPolicy: tc.pod}, tc.code), "%+v", tc)
		}
	})
	t.Run("nextRun", func(t *testing.T) {
		require.Equal(t, epoch.Add(10e9), nextRun(epoch, epoch.Add(3e9), 10e9))
		require.Equal(t, epoch.Add(25e9), nextRun(epoch, epoch.Add(25e9), 10e9), "overran: at once")
	})
	t.Run("inInitialDelay", func(t *testing.T) {
		require.True(t, inInitialDelay(epoch.Add(14999e6), epoch, 15))
		require.False(t, inInitialDelay(epoch.Add(15e9), epoch, 15))
	})
}
