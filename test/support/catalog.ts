import { ApiClient } from './api-client';

/** Ids of a seeded image and flavor that fit each other, looked up through the tenant API. */
export async function seededChoice(api: ApiClient): Promise<{ image_id: string; flavor_id: string }> {
  const images = (await api.get('/v1/images')).body.items as Array<{ id: string; name: string }>;
  const flavors = (await api.get('/v1/flavors')).body.items as Array<{ id: string; name: string }>;
  return {
    image_id: images.find((i) => i.name === 'debian-12')!.id,
    flavor_id: flavors.find((f) => f.name === 'small')!.id,
  };
}
