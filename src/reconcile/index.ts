export { ClusterScanned, type ScannedResource } from './cluster-scanned';
