// Package validate holds the offline checks of Vigil's ops kit: the
// Dockerfile, deploy/compose.yaml, the Kubernetes manifests in deploy/k8s,
// the Grafana dashboard and the Prometheus rules in dashboards/. It is a
// separate module so that the library's go.mod stays free of the Kubernetes
// and Prometheus server dependencies; run it with
// `cd deploy/validate && go test ./...` (make test does). The checks need
// promtool (Debian package prometheus) on PATH.
package validate
