package source_test

import (
	"github.com/mutatis-dev/mutatis/controller"
	"github.com/mutatis-dev/mutatis/source"
)

// Both sources of `mutatis serve` are one interface: files and a live
// cluster's informers.
var (
	_ source.Source = (*source.Files)(nil)
	_ source.Source = (*controller.Controller)(nil)
)
