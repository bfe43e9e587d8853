// One HCP process started by the launcher: main.ts with the roles and settings the launcher chose.
import './ignore-terminal-interrupt';
import '../main';
