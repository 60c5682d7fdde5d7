// Command etcd is upstream's etcd server v3.7.0 (etcdmain, as in
// go.etcd.io/etcd/server/v3/main.go), built from the Go module proxy for
// mutatis' end-to-end tests. See docs/e2e.md.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
