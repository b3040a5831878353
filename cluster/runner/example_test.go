package runner_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/cluster/runner"
)

// Every member of the cluster "demo" gives an -f pod without metadata.uid the same UID, so the
// sharders place it alike; a pod that has a UID keeps it.
func ExampleClusterUID() {
	assign := runner.ClusterUID("demo")
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	mine := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "mine"}}
	assign(web)
	assign(mine)
	fmt.Println(web.UID)
	fmt.Println(mine.UID)
	// Output:
	// efd4b14a7ff45af3f9cb8f56b9456f50
	// mine
}
