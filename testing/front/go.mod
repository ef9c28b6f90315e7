// The simulated control-plane node's API server front (main.go): Go's
// standard library only. Built by testing/front/install.sh into a cache
// outside the repository.
module nico.homystack.com/apiserverfront

go 1.26.0
