package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Defaults of LeaderElectionOptions: kube-controller-manager's.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// LeaderElectionOptions make the replicas of mutatis elect, through a
// coordination.k8s.io/v1 Lease in Config.Namespace, the one that writes to
// the cluster: the webhook configurations, the Ready conditions of shadow
// policies and the Events on policies and bindings. Every replica, leader or
// not, keeps its informers and Engine current and serves.
type LeaderElectionOptions struct {
	// Enabled turns leader election on. Off, the controller always writes:
	// run a single replica then.
	Enabled bool
	// LeaseName is the name of the Lease; default Webhook.Name.
	LeaseName string
	// Identity names this replica in the Lease; it must differ between
	// replicas. Default: the hostname, "_" and a random suffix.
	Identity string
	// LeaseDuration is how long a follower waits, after it last saw the
	// Lease change, before it takes the Lease over (default 15s, at least
	// 1s: the Lease counts whole seconds).
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// stops writing (default 10s, below LeaseDuration).
	RenewDeadline time.Duration
	// RetryPeriod is the interval between tries to acquire or renew
	// (default 2s).
	RetryPeriod time.Duration
}

// setDefaults fills the unset options; webhookName is the default lease
// name.
func (o *LeaderElectionOptions) setDefaults(webhookName string) error {
	if o.LeaseName == "" {
		o.LeaseName = webhookName
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leader election identity: %w", err)
		}
		o.Identity = host + "_" + utilrand.String(8)
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	return nil
}

// leadership is the controller's view of the Lease.
type leadership struct {
	// decided is closed once the first acquisition attempt has an outcome:
	// this replica leads, or another one does. The first sync waits for it
	// (bounded), so that a replica that finds the Lease free writes its
	// webhook configurations before it first reports its status.
	decided     chan struct{}
	decidedOnce sync.Once

	// Under Controller.mu.
	ctx  context.Context // the leader's context: nil while following, done when the lease is lost
	term uint64          // counts the terms this replica has led
}

func (l *leadership) decide() { l.decidedOnce.Do(func() { close(l.decided) }) }

// validateLeaderElection checks the options as the elector will (New makes
// no API calls, so this builds one and drops it).
func (c *Controller) validateLeaderElection() error {
	o := c.cfg.LeaderElection
	if c.cfg.Namespace == "" {
		return errors.New("leader election: the Lease lives in Config.Namespace, which is empty")
	}
	if errs := validation.IsDNS1123Subdomain(o.LeaseName); len(errs) > 0 {
		return fmt.Errorf("leader election: lease name %q: %v", o.LeaseName, errs)
	}
	if o.LeaseDuration < time.Second {
		return fmt.Errorf("leader election: the lease duration must be at least 1s (the Lease counts seconds), not %v", o.LeaseDuration)
	}
	if _, err := c.newElector(); err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	return nil
}

// newElector builds an elector over a new LeaseLock (the lock keeps the
// last Lease it read, so each campaign gets its own).
func (c *Controller) newElector() (*leaderelection.LeaderElector, error) {
	o := c.cfg.LeaderElection
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: c.cfg.Namespace, Name: o.LeaseName},
			Client:     c.clients.Kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
		},
		LeaseDuration: o.LeaseDuration,
		RenewDeadline: o.RenewDeadline,
		RetryPeriod:   o.RetryPeriod,
		// The next leader need not wait for the Lease to expire when this
		// replica stops: the writes it guards use the leader's context,
		// which is done before the Lease is released.
		ReleaseOnCancel: true,
		Name:            o.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: c.startLeading,
			OnStoppedLeading: c.stopLeading,
			OnNewLeader: func(identity string) {
				if identity != o.Identity {
					c.leader.decide()
				}
			},
		},
	})
}

// campaign competes for the Lease until ctx is done. Losing the Lease stops
// the writes, not the replica: it keeps serving and campaigns again.
func (c *Controller) campaign(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		le, err := c.newElector()
		if err != nil { // validated by New
			logger.Error(err, "leader election")
			return
		}
		le.Run(ctx)
		if ctx.Err() == nil {
			logger.Info("lost the lease; this replica keeps serving and stops writing to the cluster", "lease", c.cfg.Namespace+"/"+c.cfg.LeaderElection.LeaseName)
		}
	}
}

// startLeading runs when this replica acquires the Lease; lctx is done when
// it loses it. The elector calls it on its own goroutine, possibly after
// the term already ended.
func (c *Controller) startLeading(lctx context.Context) {
	c.mu.Lock()
	if lctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	c.leader.ctx = lctx
	c.leader.term++
	c.setLeaderLocked(true)
	c.mu.Unlock()
	klog.FromContext(lctx).Info("acquired the lease; this replica writes the webhook configurations, status and Events",
		"lease", c.cfg.Namespace+"/"+c.cfg.LeaderElection.LeaseName, "identity", c.cfg.LeaderElection.Identity)
	c.leader.decide()
	// Bring the cluster in line with the caches now: the previous leader
	// may have stopped before writing the last changes.
	c.queue.Add(syncKey)
}

// stopLeading runs when an elector stops (it may never have led).
func (c *Controller) stopLeading() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader.ctx != nil {
		c.leader.ctx = nil
		c.setLeaderLocked(false)
	}
}

// leadAlone makes this replica the writer without an election.
func (c *Controller) leadAlone(ctx context.Context) {
	c.mu.Lock()
	c.leader.ctx = ctx
	c.leader.term++
	c.setLeaderLocked(true)
	c.mu.Unlock()
	c.leader.decide()
}

// writeContext returns the context of the cluster writes of this sync and
// the leadership term, or nil when this replica does not lead.
func (c *Controller) writeContext() (context.Context, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader.ctx == nil || c.leader.ctx.Err() != nil {
		return nil, 0
	}
	return c.leader.ctx, c.leader.term
}

// setLeaderLocked publishes a change of leadership to the Status waiters.
func (c *Controller) setLeaderLocked(leader bool) {
	if c.status.Leader == leader {
		return
	}
	c.status.Leader = leader
	close(c.changed)
	c.changed = make(chan struct{})
}

// startLeaderElection decides who writes, once the informers have synced,
// and returns what stops the election (nil: nothing to stop). Without
// leader election this controller writes. With it, a campaign runs until
// ctx is done; the first sync waits for its first outcome, at most
// RenewDeadline. When Config.Namespace does not exist (mutatis runs out of
// the cluster, e.g. in development), no Lease can be made there: the
// replica writes without an election and says so.
func (c *Controller) startLeaderElection(ctx context.Context) (stop func()) {
	if !c.cfg.LeaderElection.Enabled {
		c.leadAlone(ctx)
		return nil
	}
	logger := klog.FromContext(ctx)
	o := c.cfg.LeaderElection
	lease := c.cfg.Namespace + "/" + o.LeaseName
	if _, err := c.namespaces.Get(c.cfg.Namespace); apierrors.IsNotFound(err) {
		logger.Info("the namespace of the leader election Lease does not exist: this replica writes to the cluster without an election; run no other replica",
			"namespace", c.cfg.Namespace)
		c.leadAlone(ctx)
		return nil
	}
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.campaign(ectx)
	}()
	timer := time.NewTimer(o.RenewDeadline)
	defer timer.Stop()
	select {
	case <-c.leader.decided:
	case <-timer.C:
		logger.Info("no leader seen yet; serving as a follower meanwhile", "lease", lease, "identity", o.Identity)
	case <-ctx.Done():
	}
	// Stopping releases the Lease (if held) after the writes' context is
	// done, so a follower takes over at its next retry.
	return func() {
		cancel()
		<-done
	}
}
