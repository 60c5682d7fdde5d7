package main

import (
	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/user"
)

// userFlags are the requesting user of the admission requests a command
// builds: --user, --uid and --groups (apply, migrate-check, review).
type userFlags struct {
	name, uid string
	groups    []string
}

// add declares the flags on f.
func (u *userFlags) add(f *pflag.FlagSet) {
	f.StringVar(&u.name, "user", "admin", "the requesting user")
	f.StringVar(&u.uid, "uid", "", "the requesting user's UID")
	f.StringSliceVar(&u.groups, "groups", []string{"system:masters", "system:authenticated"}, "the requesting user's groups")
}

// info is the user the flags name.
func (u *userFlags) info() *user.DefaultInfo {
	return &user.DefaultInfo{Name: u.name, UID: u.uid, Groups: u.groups}
}
