package params

// ReferenceCollector is c presenting params through the typed round trip
// (presentReference), the definition the tests hold present to.
func ReferenceCollector(c *Collector) *Collector {
	cp := *c
	cp.reference = true
	return &cp
}
