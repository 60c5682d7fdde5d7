package webhookclient

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Service names a Kubernetes Service a webhook's clientConfig.service
// points at. Port 0 stands for every port of the service.
type Service struct {
	Namespace, Name string
	Port            int32
}

// String formats s as NS/NAME[:PORT], the form ParseServiceURL reads.
func (s Service) String() string {
	if s.Port == 0 {
		return s.Namespace + "/" + s.Name
	}
	return fmt.Sprintf("%s/%s:%d", s.Namespace, s.Name, s.Port)
}

// ServiceURLs maps services to the address where they can be reached from
// where mutatis runs (outside the cluster): the `--service-url
// NS/NAME[:PORT]=URL` flags. kube-apiserver resolves a service to one of
// its endpoints; mutatis dials the mapped URL's host instead and keeps
// everything else as kube-apiserver has it: the request goes to
// https://NAME.NS.svc:PORT/PATH with the service's path, and the serving
// certificate is verified for the server name NAME.NS.svc.
type ServiceURLs map[Service]*url.URL

// ParseServiceURL reads one NS/NAME[:PORT]=URL mapping. URL must be an
// https URL with a host and no path, query or fragment (the path is the
// webhook's clientConfig.service.path).
func ParseServiceURL(s string) (Service, *url.URL, error) {
	key, raw, ok := strings.Cut(s, "=")
	if !ok {
		return Service{}, nil, fmt.Errorf("service URL %q: want NS/NAME[:PORT]=URL", s)
	}
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" {
		return Service{}, nil, fmt.Errorf("service URL %q: want NS/NAME[:PORT]=URL", s)
	}
	svc := Service{Namespace: ns}
	if n, port, ok := strings.Cut(name, ":"); ok {
		p, err := strconv.ParseInt(port, 10, 32)
		if err != nil || p < 1 || p > 65535 {
			return Service{}, nil, fmt.Errorf("service URL %q: port %q is not a number in 1-65535", s, port)
		}
		name, svc.Port = n, int32(p)
	}
	if name == "" {
		return Service{}, nil, fmt.Errorf("service URL %q: want NS/NAME[:PORT]=URL", s)
	}
	svc.Name = name
	u, err := url.Parse(raw)
	if err != nil {
		return Service{}, nil, fmt.Errorf("service URL %q: %w", s, err)
	}
	switch {
	case u.Scheme != "https":
		return Service{}, nil, fmt.Errorf("service URL %q: the URL must be https (kube-apiserver calls services over TLS)", s)
	case u.Host == "":
		return Service{}, nil, fmt.Errorf("service URL %q: the URL has no host", s)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.User != nil:
		return Service{}, nil, fmt.Errorf("service URL %q: the URL may only name a host and port (the path is the webhook's clientConfig.service.path)", s)
	}
	return svc, u, nil
}

// Add parses mapping (NS/NAME[:PORT]=URL) into m; a service mapped twice
// is an error.
func (m ServiceURLs) Add(mapping string) error {
	svc, u, err := ParseServiceURL(mapping)
	if err != nil {
		return err
	}
	if prev, ok := m[svc]; ok {
		return fmt.Errorf("service %s mapped twice (%s and %s)", svc, prev, u)
	}
	m[svc] = u
	return nil
}

// resolve is the host:port to dial for the service at port, the mapping
// with that port first, then the one for every port.
func (m ServiceURLs) resolve(namespace, name string, port int32) (string, bool) {
	for _, k := range []Service{{namespace, name, port}, {namespace, name, 0}} {
		if u, ok := m[k]; ok {
			host := u.Host
			if u.Port() == "" {
				host += ":443"
			}
			return host, true
		}
	}
	return "", false
}
