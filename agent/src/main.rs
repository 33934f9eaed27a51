fn main() { println!("{}", reuseport_model::version()); }
