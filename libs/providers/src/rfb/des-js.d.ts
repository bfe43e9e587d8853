// des.js ships no types; this declares the one cipher HCP uses (single DES, ECB, no padding).
declare module 'des.js' {
  interface DesCipher {
    update(data: ArrayLike<number>): number[];
    final(): number[];
  }
  export const DES: {
    create(options: { type: 'encrypt' | 'decrypt'; key: ArrayLike<number>; padding?: boolean }): DesCipher;
  };
}
