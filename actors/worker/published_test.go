package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/probeactor/probeactor/messages"
)

func TestPublished(t *testing.T) {
	type op struct {
		forget messages.ContainerID // when set, Forget this ID instead of publishing
		id     messages.ContainerID
		r      messages.Result
		want   bool
	}
	cases := []struct {
		name string
		ops  []op
	}{
		{"first value is always sent, even the zero Result", []op{{id: "a", r: messages.Success, want: true}}},
		{"repeat is dropped", []op{
			{id: "a", r: messages.Failure, want: true},
			{id: "a", r: messages.Failure, want: false},
			{id: "a", r: messages.Failure, want: false}}},
		{"a change is sent, and so is the change back", []op{
			{id: "a", r: messages.Success, want: true},
			{id: "a", r: messages.Failure, want: true},
			{id: "a", r: messages.Success, want: true}}},
		{"a new container ID gets the same value again", []op{
			{id: "a", r: messages.Success, want: true},
			{id: "b", r: messages.Success, want: true},
			{id: "b", r: messages.Success, want: false}}},
		{"back to an earlier container ID", []op{
			{id: "a", r: messages.Success, want: true},
			{id: "b", r: messages.Success, want: true},
			{id: "a", r: messages.Success, want: true}}},
		{"after Forget the value is sent again", []op{
			{id: "a", r: messages.Unknown, want: true},
			{forget: "a"},
			{id: "a", r: messages.Unknown, want: true}}},
		{"Forget of another ID keeps the dedup", []op{
			{id: "b", r: messages.Failure, want: true},
			{forget: "a"},
			{id: "b", r: messages.Failure, want: false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p Published
			for i, o := range tc.ops {
				if o.forget != "" {
					p.Forget(o.forget)
					continue
				}
				assert.Equal(t, o.want, p.Changed(o.id, o.r), "op %d: %s %s", i, o.id, o.r)
			}
		})
	}
}
