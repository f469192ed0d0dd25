mod store_crash;
