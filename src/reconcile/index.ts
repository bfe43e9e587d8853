// The reconcile context as other contexts see it: the cluster listings it publishes.
export { ClusterScanned, type ScannedResource } from './cluster-scanned';
export { ReconcileModule } from './reconcile.module';
