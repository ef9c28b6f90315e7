// Pins the Flux controllers whose CRDs the Flux recipes of deploy/gitops/ are checked against
// (tests/integration/flux_recipe_test.ts). Nothing is built from it: testing/flux/install.sh takes
// each module's config/crd/bases/ out of the module the Go module proxy serves (verified against
// go.sum) into a cache outside the repo. Flux 2.7's kustomize-controller and helm-controller.
module nico.homystack.com/fluxcrds

go 1.26.0

require (
	github.com/fluxcd/helm-controller v1.4.0
	github.com/fluxcd/kustomize-controller v1.7.3
)
