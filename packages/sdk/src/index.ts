export { type SignPsbtOptions, signPsbt } from './signer.ts';
