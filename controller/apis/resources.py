"""The custom resources aiolbc serves (manifests/crds), as runtime Resource descriptors."""

from __future__ import annotations

from typing import Final

from runtime.resources import Resource

TARGETGROUPBINDINGS: Final = Resource("elbv2.k8s.aws", "v1beta1", "targetgroupbindings",
                                      "TargetGroupBinding")
INGRESSCLASSPARAMS: Final = Resource("elbv2.k8s.aws", "v1beta1", "ingressclassparams",
                                     "IngressClassParams", namespaced=False)
ALBTARGETCONTROLCONFIGS: Final = Resource("elbv2.k8s.aws", "v1beta1", "albtargetcontrolconfigs",
                                          "ALBTargetControlConfig")
