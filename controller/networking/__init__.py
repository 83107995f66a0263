"""Security groups: the managed frontend group of a load balancer, the cluster's shared backend
group, and the rules targets' security groups need (README.md)."""
