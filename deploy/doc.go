// Package deploy holds no code: it is the home of the deployment files
// (Kubernetes manifests under kubernetes/, a systemd unit under systemd/)
// and of the tests that keep them true. The tests decode every manifest
// strictly into the Kubernetes API types and run each shipped
// configuration through the service's own validation, so that a manifest
// or a config key that rots fails CI rather than a team's first deploy.
//
// The Kubernetes types are imported by the tests only: the workqueue
// binary links none of them (TestBinaryLinksNoKubernetesTypes).
package deploy
