package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/lab/pki"
)

// The APF scenario's objects: a ServiceAccount whose requests a FlowSchema of the lab's puts into a priority
// level of its own. The lab's admin (system:masters) is exempt from API Priority and Fairness, as every
// cluster's masters are: only a client with another identity is ever queued or rejected.
const (
	NoisyServiceAccount = "kubeslow-lab-noisy"
	NoisyFlowSchema     = "kubeslow-lab-noisy"
	SmallPriorityLevel  = "kubeslow-lab-small"
	noisyBinding        = "kubeslow-lab-noisy-view"
)

// APFLevel is the priority level the noisy ServiceAccount's requests go to: NominalShares of the server's
// concurrency (the built-in levels have 245 in all: 1 share is ~3 seats of the default 600), none lent or
// borrowed, and Reject (no queue) or a queue of QueueLength.
type APFLevel struct {
	NominalShares int32
	Reject        bool
	QueueLength   int32
}

// NoisyKubeconfig is the kubeconfig of the noisy ServiceAccount (a bound token), written by StartNoisyClient.
func (d Dirs) NoisyKubeconfig() string {
	return filepath.Join(d.PKIDir(), NoisyServiceAccount+".kubeconfig")
}

// StartNoisyClient creates the ServiceAccount (bound to the view ClusterRole), the priority level and the
// FlowSchema that puts all of its requests there, and writes a kubeconfig with a token of it (an hour).
func StartNoisyClient(ctx context.Context, d Dirs, level APFLevel) error {
	c, err := AdminClient(d)
	if err != nil {
		return err
	}
	if err := created(c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, &corev1.ServiceAccount{ObjectMeta: labMeta(NoisyServiceAccount, metav1.NamespaceDefault)}, metav1.CreateOptions{})); err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: labMeta(noisyBinding, ""),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: NoisyServiceAccount, Namespace: metav1.NamespaceDefault}}}
	if err := created(c.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})); err != nil {
		return err
	}
	zero := int32(0)
	lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if !level.Reject {
		lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: level.QueueLength}}
	}
	shares := level.NominalShares
	plc := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: labMeta(SmallPriorityLevel, ""),
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares, LendablePercent: &zero,
				BorrowingLimitPercent: &zero, LimitResponse: lr}}}
	if err := created(c.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, plc, metav1.CreateOptions{})); err != nil {
		return err
	}
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: labMeta(NoisyFlowSchema, ""),
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: SmallPriorityLevel},
			MatchingPrecedence:  500,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: NoisyServiceAccount, Namespace: metav1.NamespaceDefault}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					ClusterScope: true, Namespaces: []string{"*"}}}}}}}
	if err := created(c.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})); err != nil {
		return err
	}
	hour := int64(3600)
	tok, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).CreateToken(ctx, NoisyServiceAccount,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return pki.WriteTokenKubeconfig(d.PKIDir(), d.NoisyKubeconfig(), APIServerURL(), NoisyServiceAccount, tok.Status.Token)
}

// StopNoisyClient deletes what StartNoisyClient made (and nothing else) and its kubeconfig.
func StopNoisyClient(ctx context.Context, d Dirs) error {
	c, err := AdminClient(d)
	if err != nil {
		return err
	}
	return errors.Join(deleteNoisy(ctx, c), ignoreMissing(os.Remove(d.NoisyKubeconfig())))
}

func deleteNoisy(ctx context.Context, c kubernetes.Interface) error {
	gone := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	opts := metav1.DeleteOptions{}
	return errors.Join(
		gone(c.FlowcontrolV1().FlowSchemas().Delete(ctx, NoisyFlowSchema, opts)),
		gone(c.FlowcontrolV1().PriorityLevelConfigurations().Delete(ctx, SmallPriorityLevel, opts)),
		gone(c.RbacV1().ClusterRoleBindings().Delete(ctx, noisyBinding, opts)),
		gone(c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Delete(ctx, NoisyServiceAccount, opts)))
}

func ignoreMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
